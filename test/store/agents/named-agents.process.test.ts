/**
 * A name per channel (spec §8d), through real doors: named stdio servers
 * (the real SDK client over real pipes to `serve --agent`), the real hub
 * over loopback (MCP and REST), and the CLI. The deposit header states the
 * name, a record whose from: names another agent is refused, an answer
 * lands once without a key, and a named stdio server's idempotency keys
 * are its own.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { errorCode, record, runCli, stdioClient, tempStore, textOf } from '../../support/helpers.js';
import { httpClient, sign, startTestHub } from '../../support/http-helpers.js';

async function append(client: Client, bytes: string, extra: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name: 'append_relay', arguments: { bytes, ...extra } })) as CallToolResult;
}

function stored(result: CallToolResult): { id: string; replayed?: true; depositedBy: string } {
  assert.notEqual(result.isError, true, textOf(result));
  return result.structuredContent as { id: string; replayed?: true; depositedBy: string };
}

test('a named stdio server states its agent in the deposit header; deposited-by stays mcp', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, ['--agent', 'bob']);
  const { id, depositedBy } = stored(await append(client, record({ kind: 'note', from: 'bob' })));
  assert.equal(depositedBy, 'mcp');
  const file = await readFile(path.join(corpus, id), 'utf8');
  const header = file.slice(0, file.indexOf('---\n'));
  assert.match(header, /^digest: sha256:[0-9a-f]{64}\n(idempotency-key: [^\n]+\n)?agent: bob\n$/m);
  assert.ok(header.endsWith('agent: bob\n'), header);
});

test('P_E_RELAY_AGENT names a stdio server as --agent does', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, [], { P_E_RELAY_AGENT: 'carol' });
  const { id } = stored(await append(client, record({ kind: 'note' })));
  assert.match(await readFile(path.join(corpus, id), 'utf8'), /\nagent: carol\n---\n/);
});

test('an unnamed stdio server writes no agent key', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const { id } = stored(await append(client, record({ kind: 'note', from: 'anyone' })));
  assert.doesNotMatch(await readFile(path.join(corpus, id), 'utf8'), /^agent:/m);
});

test('serve refuses an --agent that is not of the agent shape, saying which shape to send', async (t) => {
  const { corpus } = await tempStore(t);
  for (const bad of ['Bob', '=-bob', 'bob/x', 'a'.repeat(65), '']) {
    const r = await runCli(['serve', '--corpus', corpus, bad.startsWith('=') ? `--agent${bad}` : '--agent', ...(bad.startsWith('=') ? [] : [bad])]);
    assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
    assert.match(r.stderr, /lower-case letters, digits/);
  }
  const all = await runCli(['serve', '--corpus', corpus, '--agent', 'all']);
  assert.equal(all.code, 2);
  assert.match(all.stderr, /"all" is the name every agent listens for/);
  const env = await runCli(['serve', '--corpus', corpus], { env: { P_E_RELAY_AGENT: 'Not OK' } });
  assert.equal(env.code, 2);
  assert.match(env.stderr, /P_E_RELAY_AGENT "Not OK" is not an agent name/);
});

test('over stdio a named server refuses a record from: another agent (from_mismatch); no from: is accepted', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, ['--agent', 'bob']);
  const forged = await append(client, record({ kind: 'answer', from: 'carol', to: 'ana', parent: 'relay-0001' }));
  assert.equal(forged.isError, true);
  assert.equal(errorCode(forged), 'from_mismatch');
  assert.match(textOf(forged), /from: bob/);
  stored(await append(client, record({ kind: 'note', to: 'ana' })));
  const list = (await client.callTool({ name: 'list_relays', arguments: {} })) as CallToolResult;
  assert.match(textOf(list), /^present \(1\): relay-0001$/m);
});

test('over HTTP a record from: someone other than the signing agent is refused from_mismatch, on /mcp and REST', async (t) => {
  const hub = await startTestHub(t, { agents: ['bob', 'carol'] });
  const key = await hub.key('bob');
  const client = await httpClient(t, hub.url, { agent: 'bob', key });
  const forged = await append(client, record({ kind: 'answer', from: 'carol', to: 'ana' }));
  assert.equal(errorCode(forged), 'from_mismatch');
  const body = record({ kind: 'note', from: 'carol' });
  const rest = await fetch(new URL('/relays', hub.url), { method: 'POST', body, headers: { Authorization: sign('bob', key, 'POST', body) } });
  assert.equal(rest.status, 403);
  assert.equal(((await rest.json()) as { error: string }).error, 'from_mismatch');
  assert.equal(stored(await append(client, record({ kind: 'note', from: 'bob' }))).depositedBy, 'mcp/bob');
  assert.equal(hub.store.size, 1);
});

test('a named agent\'s answer without a key lands once: the second is replayed, not stored', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, ['--agent', 'bob']);
  const q = stored(await append(client, record({ kind: 'question', from: 'bob', to: 'bob' })));
  const answer = record({ kind: 'Answer', from: 'bob', to: 'bob', parent: q.id }, 'yes');
  const first = stored(await append(client, answer));
  const again = stored(await append(client, answer));
  assert.equal(again.id, first.id);
  assert.equal(again.replayed, true);
  assert.match(await readFile(path.join(corpus, first.id), 'utf8'), new RegExp(`\\nidempotency-key: bob/answer/${q.id}\\n`));
});

test('a named stdio server\'s keys are its own: another agent cannot pre-claim <name>/answer/<id>', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  const carol = (await stdioClient(t, corpus, ['--agent', 'carol'])).client;
  const q = stored(await append(ana, record({ kind: 'question', from: 'ana', to: 'ana' })));
  const key = `ana/answer/${q.id}`;
  stored(await append(carol, record({ kind: 'note', from: 'carol' }, 'squatting'), { idempotency_key: key }));
  const real = stored(await append(ana, record({ kind: 'answer', from: 'ana', to: 'ana', parent: q.id }, 'mine'), { idempotency_key: key }));
  assert.equal(real.replayed, undefined);
  assert.match(await readFile(path.join(corpus, real.id), 'utf8'), /\nagent: ana\n---\n@p-e\/x0\nkind: answer/);
});
