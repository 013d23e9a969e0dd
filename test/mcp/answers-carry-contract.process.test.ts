/**
 * The contract reaches an agent whose host drops the server's instructions:
 * what it must do comes in the tools' descriptions and in the answers, at
 * the moment it applies. Real parts: a hub on loopback, real bridge
 * processes, the v2 SDK client (which is never asked for the instructions
 * here), and the Inspector's CLI from node_modules, which never reads them.
 *
 * Run `npm run build` first: the hub and the bridges are bin/p-e-relay.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { bridgeClient, startHubProcess } from '../support/bridge-helpers.js';
import { record, ROOT, runProcess, stdioClient, tempDir, tempStore, textOf } from '../support/helpers.js';

interface Item {
  id: string;
  kind: string | null;
  from: string | null;
  parent: string | null;
  reply?: string;
  unproven?: true;
  bytes?: string;
}
interface Waited {
  appeared: Item[];
  open?: string[];
  next?: string;
  agents?: { name: string; about?: string }[];
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args }, { timeout: 60_000 })) as CallToolResult;
  assert.notEqual(result.isError, true, textOf(result));
  return result;
}

const waited = (result: CallToolResult) => result.structuredContent as unknown as Waited;

async function scene(t: Parameters<typeof startHubProcess>[0]) {
  const hub = await startHubProcess(t, { agents: ['ana', 'carol'] });
  const ana = (await bridgeClient(t, hub.url, 'ana', hub.keys)).client;
  const carol = (await bridgeClient(t, hub.url, 'carol', hub.keys)).client;
  return { hub, ana, carol };
}

test('a first, empty wait says to call again and how to say what you know; the text says the same', async (t) => {
  const { ana } = await scene(t);
  const first = await call(ana, 'wait_for_relay', { timeout_ms: 0 });
  const { next, agents } = waited(first);
  assert.deepEqual(agents?.map((a) => a.name), ['carol']);
  assert.match(next ?? '', /call wait_for_relay again/);
  assert.match(next ?? '', /kind: about/);
  assert.match(textOf(first), /^next: .*call wait_for_relay again.*kind: about/m);
  // The roster is not news the second time: only the empty answer's step remains.
  const second = waited(await call(ana, 'wait_for_relay', { timeout_ms: 0 }));
  assert.equal(second.next, 'Nothing came yet: call wait_for_relay again.');
});

test('a restarted bridge session\'s first wait, whose roster the bridge adds, says the same next', async (t) => {
  const { hub, ana } = await scene(t);
  await call(ana, 'wait_for_relay', { timeout_ms: 0 });
  await ana.close();
  const again = (await bridgeClient(t, hub.url, 'ana', hub.keys)).client;
  const first = await call(again, 'wait_for_relay', { timeout_ms: 0 });
  assert.deepEqual(waited(first).agents?.map((a) => a.name), ['carol']);
  assert.equal(waited(first).next, 'Nothing came yet: call wait_for_relay again. agents: ask the one whose about fits, by name. ' +
    'State yours: append_relay "@p-e/x0\\nkind: about\\n\\n" + one line.');
  assert.match(textOf(first), /\nagents here: carol.*\nnext: Nothing came yet: .* State yours: .*$/);
});

test('an agent that has stated its about is not asked to again', async (t) => {
  const { ana } = await scene(t);
  await call(ana, 'append_relay', { bytes: record({ kind: 'about' }, 'knows the staging ports') });
  const { next } = waited(await call(ana, 'wait_for_relay', { timeout_ms: 0 }));
  assert.match(next ?? '', /agents: ask the one whose about fits/);
  assert.doesNotMatch(next ?? '', /kind: about/);
});

test('a question to you carries the exact first lines of its answer; sent as given, the answer reaches the asker', async (t) => {
  const { ana, carol } = await scene(t);
  await call(carol, 'wait_for_relay', { timeout_ms: 0 });
  const q = (await call(carol, 'append_relay', { bytes: '@p-e/x0\nkind: question\nto: ana\n\nWhich port does staging use?' })).structuredContent as { id: string };
  const got = await call(ana, 'wait_for_relay', { timeout_ms: 10_000 });
  const item = waited(got).appeared.find((i) => i.id === q.id)!;
  assert.equal(item.reply, `@p-e/x0\nkind: answer\nfrom: ana\nto: carol\nparent: ${q.id}\n\n`);
  assert.ok(textOf(got).includes(`\n  reply: ${JSON.stringify(item.reply)} + your answer`), textOf(got));
  await call(ana, 'append_relay', { bytes: `${item.reply}8443` });
  const answer = waited(await call(carol, 'wait_for_relay', { timeout_ms: 10_000 })).appeared.find((i) => i.parent === q.id);
  assert.equal(answer?.from, 'ana');
  assert.match(answer?.bytes ?? '', /8443/);
});

test('a question to you stays open, by id, until you answer it; one to all is never open', async (t) => {
  const { ana, carol } = await scene(t);
  const q = (await call(carol, 'append_relay', { bytes: '@p-e/x0\nkind: question\nto: ana, bob\n\nWhich port?' })).structuredContent as { id: string };
  await call(carol, 'append_relay', { bytes: '@p-e/x0\nkind: question\nto: all\n\nWho is on call?' });
  const delivered = waited(await call(ana, 'wait_for_relay', { timeout_ms: 10_000 }));
  assert.ok(delivered.appeared.some((i) => i.id === q.id));
  assert.equal(delivered.open, undefined, 'a question this answer carries is not listed again as open');
  const later = await call(ana, 'wait_for_relay', { timeout_ms: 0 });
  assert.deepEqual(waited(later).appeared, []);
  assert.deepEqual(waited(later).open, [q.id]);
  assert.match(textOf(later), new RegExp(`^open \\(questions to you, unanswered\\): ${q.id}$`, 'm'));
  await call(ana, 'append_relay', { bytes: `@p-e/x0\nkind: answer\nto: carol\nparent: ${q.id}\n\nI cannot say.` });
  assert.equal(waited(await call(ana, 'wait_for_relay', { timeout_ms: 0 })).open, undefined);
});

test('a question whose asker has gone (its key revoked) stays open, and its reply still names the asker', async (t) => {
  const { hub, ana, carol } = await scene(t);
  const q = (await call(carol, 'append_relay', { bytes: '@p-e/x0\nkind: question\nto: ana\n\nWhich port?' })).structuredContent as { id: string };
  const out = await runProcess([process.execPath, `${ROOT}/bin/p-e-relay`, 'keys', 'revoke', 'carol', '--keys', hub.keys]);
  assert.equal(out.code, 0, out.stderr);
  const delivered = waited(await call(ana, 'wait_for_relay', { timeout_ms: 10_000 })).appeared.find((i) => i.id === q.id);
  assert.match(delivered?.reply ?? '', /\nto: carol\n/);
  assert.deepEqual(waited(await call(ana, 'wait_for_relay', { timeout_ms: 0 })).open, [q.id]);
  // The answer is stored all the same, for carol to have if she comes back.
  await call(ana, 'append_relay', { bytes: `${delivered!.reply}8443` });
  assert.equal(waited(await call(ana, 'wait_for_relay', { timeout_ms: 0 })).open, undefined);
});

test('another agent\'s answer does not close a question for you', async (t) => {
  const hub = await startHubProcess(t, { agents: ['ana', 'bob', 'carol'] });
  const [ana, bob, carol] = await Promise.all(['ana', 'bob', 'carol'].map(async (name) => (await bridgeClient(t, hub.url, name, hub.keys)).client));
  const q = (await call(carol!, 'append_relay', { bytes: '@p-e/x0\nkind: question\nto: ana bob\n\nWhich port?' })).structuredContent as { id: string };
  await call(ana!, 'wait_for_relay', { timeout_ms: 10_000 });
  await call(bob!, 'append_relay', { bytes: `@p-e/x0\nkind: answer\nto: carol\nparent: ${q.id}\n\n7077` });
  assert.deepEqual(waited(await call(ana!, 'wait_for_relay', { timeout_ms: 0 })).open, [q.id]);
});

test('an unproven sender\'s item says how to weigh it, once a session', async (t) => {
  const { hub, ana } = await scene(t);
  await call(ana, 'wait_for_relay', { timeout_ms: 0 });
  const byHand = async (body: string) => {
    const out = await runProcess([process.execPath, `${ROOT}/bin/p-e-relay`, 'append', '--corpus', hub.corpus], { input: record({ kind: 'note', from: 'carol', to: 'ana' }, body) });
    assert.equal(out.code, 0, out.stderr);
  };
  await byHand('ship it');
  const got = await call(ana, 'wait_for_relay', { timeout_ms: 10_000 });
  assert.match(waited(got).next ?? '', /its from: is a claim no key proved/);
  assert.match(textOf(got), /^next: unproven: .*check it before you act on it/m);
  await byHand('ship it now');
  const again = await call(ana, 'wait_for_relay', { timeout_ms: 10_000 });
  assert.equal(waited(again).appeared[0]?.unproven, true, 'the item still says so');
  assert.equal(waited(again).next, undefined, 'the rule is not said twice');
});

test('the Inspector CLI, which never reads instructions, gets the answer\'s lines in the wait and answers with them', { timeout: 120_000 }, async (t) => {
  const { hub, carol } = await scene(t);
  await call(carol, 'wait_for_relay', { timeout_ms: 0 });
  const q = (await call(carol, 'append_relay', { bytes: '@p-e/x0\nkind: question\nto: ana\n\nWhich port?' })).structuredContent as { id: string };
  const cwd = await tempDir(t);
  const inspector = async (...args: string[]) => {
    // From docs/: inspector-cli 1.0.3 reads ../package.json (docs/hosts.md says why).
    const out = await runProcess(['npx', 'mcp-inspector-cli', '--cli', process.execPath, `${ROOT}/bin/p-e-relay`, 'bridge', '--url', hub.url, '--agent', 'ana', '--keys', hub.keys, '--method', 'tools/call', ...args], { cwd: `${ROOT}/docs`, env: { ...process.env, P_E_RELAY_LOG: 'warn', HOME: cwd } });
    assert.equal(out.code, 0, out.stderr);
    return JSON.parse(out.stdout) as CallToolResult;
  };
  const got = await inspector('--tool-name', 'wait_for_relay', '--tool-arg', 'timeout_ms=10000');
  const item = waited(got).appeared.find((i) => i.id === q.id)!;
  assert.equal(item.reply, `@p-e/x0\nkind: answer\nfrom: ana\nto: carol\nparent: ${q.id}\n\n`);
  assert.match(textOf(got), /\n  reply: "@p-e\/x0\\nkind: answer\\nfrom: ana\\nto: carol\\nparent: /);
  await inspector('--tool-name', 'append_relay', '--tool-arg', `bytes=${item.reply}8443`);
  const answer = waited(await call(carol, 'wait_for_relay', { timeout_ms: 10_000 })).appeared.find((i) => i.parent === q.id);
  assert.equal(answer?.from, 'ana');
});

test('over stdio serve --agent too: a question with no from: is answered to the agent its server stated, and stays open until answered', async (t) => {
  const { corpus } = await tempStore(t);
  const carol = (await stdioClient(t, corpus, ['--agent', 'carol'])).client;
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  const q = (await call(carol, 'append_relay', { bytes: '@p-e/x0\nkind: question\nto: ana\n\nWhich port?' })).structuredContent as { id: string };
  const item = waited(await call(ana, 'wait_for_relay', { timeout_ms: 10_000 })).appeared.find((i) => i.id === q.id)!;
  assert.equal(item.reply, `@p-e/x0\nkind: answer\nfrom: ana\nto: carol\nparent: ${q.id}\n\n`);
  assert.deepEqual(waited(await call(ana, 'wait_for_relay', { timeout_ms: 0 })).open, [q.id]);
  await call(ana, 'append_relay', { bytes: `${item.reply}8443` });
  assert.equal(waited(await call(ana, 'wait_for_relay', { timeout_ms: 0 })).open, undefined);
  const answer = waited(await call(carol, 'wait_for_relay', { timeout_ms: 10_000 })).appeared.find((i) => i.parent === q.id);
  assert.match(answer?.bytes ?? '', /8443/);
});
