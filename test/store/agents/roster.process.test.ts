/**
 * Who is there (spec §8d): the roster through the CLI, REST and the append
 * answer, with real named stdio servers and a real hub on one corpus.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { errorCode, record, runCli, stdioClient, tempStore, textOf } from '../../support/helpers.js';
import { httpClient, startTestHub } from '../../support/http-helpers.js';
import { eventually } from '../../support/poll.js';

interface Entry { name: string; lastSeen: string; waiting: boolean; how: string[] }

async function roster(corpus: string): Promise<Entry[]> {
  const r = await runCli(['agents', '--corpus', corpus, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { agents: Entry[] }).agents;
}

async function append(client: Client, headers: Record<string, string>): Promise<CallToolResult> {
  return (await client.callTool({ name: 'append_relay', arguments: { bytes: record(headers) } })) as CallToolResult;
}

test('p-e-relay agents lists the named servers, when each was last seen, and who is waiting now', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  const bob = (await stdioClient(t, corpus, ['--agent', 'bob'])).client;
  await ana.callTool({ name: 'list_relays', arguments: {} });
  const waiting = bob.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 20_000 } });
  await eventually(async () => (await roster(corpus)).some((e) => e.name === 'bob' && e.waiting), 'bob to be waiting', { timeoutMs: 10_000, everyMs: 200 });
  const entries = await roster(corpus);
  assert.deepEqual(entries.map((e) => [e.name, e.how, e.waiting]), [['ana', ['served'], false], ['bob', ['served'], true]]);
  for (const e of entries) assert.ok(Date.now() - Date.parse(e.lastSeen) < 60_000, e.lastSeen);
  stored(await append(ana, { kind: 'question', from: 'ana', to: 'bob' }));
  await waiting;
  await eventually(async () => !(await roster(corpus)).find((e) => e.name === 'bob')!.waiting, 'bob to be waiting no more', { timeoutMs: 10_000, everyMs: 200 });
  const text = await runCli(['agents', '--corpus', corpus]);
  assert.match(text.stdout, /^agents \(2\):\nana {2}- {8}last seen \S+ {2}served\nbob /);
});

function stored(r: CallToolResult): Record<string, unknown> {
  assert.notEqual(r.isError, true, textOf(r));
  return r.structuredContent as Record<string, unknown>;
}

test('an append to a name no one on the roster has says so (unknownRecipients); all is always known', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  await stdioClient(t, corpus, ['--agent', 'bob']);
  assert.deepEqual(stored(await append(ana, { kind: 'question', from: 'ana', to: 'bobb, bob, all' })).unknownRecipients, ['bobb']);
  assert.equal(stored(await append(ana, { kind: 'question', from: 'ana', to: 'bob all' })).unknownRecipients, undefined);
});

test('--strict-recipients refuses a record to a stranger (unknown_recipient), storing nothing', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana', '--strict-recipients'])).client;
  const refused = await append(ana, { kind: 'question', from: 'ana', to: 'nobody-here' });
  assert.equal(errorCode(refused), 'unknown_recipient');
  assert.match(textOf(refused), /"nobody-here"/);
  stored(await append(ana, { kind: 'question', from: 'ana', to: 'ana, all' }));
  const list = (await ana.callTool({ name: 'list_relays', arguments: {} })) as CallToolResult;
  assert.match(textOf(list), /^present \(1\): relay-0001$/m);
});

test('an answer to its parent\'s author is never unknownRecipients, even when that author wrote through the CLI and so is on no roster', async (t) => {
  const { corpus } = await tempStore(t);
  const asked = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'question', from: 'dave', to: 'ana' }) });
  assert.equal(asked.code, 0, asked.stderr);
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana', '--strict-recipients'])).client;
  const answer = stored(await append(ana, { kind: 'answer', from: 'ana', to: 'dave', parent: 'relay-0001' }));
  assert.equal(answer.unknownRecipients, undefined);
  assert.equal(errorCode(await append(ana, { kind: 'note', from: 'ana', to: 'dave' })), 'unknown_recipient', 'without the parent, dave is still a stranger');
});

test('the hub puts every agent with a key on the roster, GET /agents answers it, and a signed call marks it signed', async (t) => {
  const hub = await startTestHub(t, { agents: ['scout-7', 'critic-2'] });
  const client = await httpClient(t, hub.url, { agent: 'scout-7', key: await hub.key('scout-7') });
  const answer = stored(await append(client, { kind: 'question', from: 'scout-7', to: 'critic-2, crtic-2' }));
  assert.deepEqual(answer.unknownRecipients, ['crtic-2']);
  const response = await fetch(new URL('/agents', hub.url));
  assert.equal(response.status, 200);
  const { agents } = (await response.json()) as { agents: Entry[] };
  assert.deepEqual(agents.map((e) => [e.name, e.how.sort()]), [['critic-2', ['key']], ['scout-7', ['key', 'signed']]]);
  assert.deepEqual((await roster(hub.corpus)).map((e) => e.name), ['critic-2', 'scout-7'], 'the CLI reads the same roster');
});

test('an unnamed server\'s append answer is as before: no unknownRecipients', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  assert.deepEqual(Object.keys(stored(await append(client, { kind: 'note', to: 'whoever' }))).sort(), ['depositedAt', 'depositedBy', 'digest', 'id', 'provenance']);
});

test('deliveredTo on a question\'s replies tells "bob has it" apart: "bob has not seen it", through MCP, REST and the CLI', async (t) => {
  const hub = await startTestHub(t, { agents: ['ana'] });
  const ana = (await stdioClient(t, hub.corpus, ['--agent', 'ana'])).client;
  const bob = (await stdioClient(t, hub.corpus, ['--agent', 'bob'])).client;
  const carol = (await stdioClient(t, hub.corpus, ['--agent', 'carol'])).client;
  await carol.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const q = stored(await append(ana, { kind: 'question', from: 'ana', to: 'bob, carol' })).id as string;
  const replies = async () => ((await ana.callTool({ name: 'list_replies', arguments: { id: q } })) as CallToolResult).structuredContent as { deliveredTo?: string[] };
  assert.deepEqual((await replies()).deliveredTo, []);
  assert.match((await runCli(['replies', '--corpus', hub.corpus, q])).stdout, /^delivered to: nobody yet$/m, 'none yet, said in words');
  await bob.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 5000 } });
  assert.deepEqual((await replies()).deliveredTo, [], 'answered, but not yet proved: bob has not made his next call');
  await bob.callTool({ name: 'list_relays', arguments: {} });
  assert.deepEqual((await replies()).deliveredTo, ['bob']);
  const rest = await fetch(new URL(`/relays/${q}/replies`, hub.url), { headers: { Accept: 'application/json' } });
  assert.deepEqual(((await rest.json()) as { deliveredTo?: string[] }).deliveredTo, ['bob']);
  const cli = await runCli(['replies', '--corpus', hub.corpus, q]);
  assert.match(cli.stdout, /^delivered to: bob$/m);
});
