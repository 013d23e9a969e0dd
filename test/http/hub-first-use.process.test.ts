/**
 * What a new user meets on a fresh clone and a fresh mirror, on a real hub
 * process over loopback: the shipped ./corpus as it comes out of git, the
 * record limit as docs/http.md states it, and a read-only mirror's answers.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { splitRecordFile } from '../../lib/model/deposit.js';
import { bridgeClient } from '../support/bridge-helpers.js';
import { errorCode, ROOT, record, runCli, tempDir, tempStore, textOf } from '../support/helpers.js';
import { httpClient, startTestHub } from '../support/http-helpers.js';
import { hubProcess, type HubProcess } from '../support/reliability-helpers.js';

async function signedPost(hub: HubProcess, agent: string, key: Buffer, bytes: string | Buffer): Promise<{ status: number; json: Record<string, unknown> }> {
  const body = Buffer.from(bytes);
  const res = await fetch(`${hub.url}/relays`, { method: 'POST', body, headers: { Authorization: authorizationFor(agent, key, 'POST', body), Accept: 'application/json' } });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** A corpus laid out exactly as the clone ships ./corpus: its tracked files and nothing else. */
async function shippedCorpus(dir: string): Promise<string> {
  const corpus = path.join(dir, 'corpus');
  await mkdir(corpus);
  const shipped = await readdir(path.join(ROOT, 'corpus'));
  for (const name of ['README.md', '.gitignore', '.gitattributes']) {
    assert.ok(shipped.includes(name), `the shipped corpus has ${name}`);
    await copyFile(path.join(ROOT, 'corpus', name), path.join(corpus, name));
  }
  return corpus;
}

test('a fresh clone: the shipped ./corpus (no .state/) takes a signed append at once, not guard_reset', { timeout: 60_000 }, async (t) => {
  const dir = await tempDir(t);
  const corpus = await shippedCorpus(dir);
  const keys = path.join(dir, 'keys');
  await addKey(keys, 'scout-7');
  const key = (await readKey(keys, 'scout-7'))!;
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } });
  const answer = await signedPost(hub, 'scout-7', key, record({ kind: 'note' }, 'the first signed append of a fresh clone'));
  assert.deepEqual([answer.status, answer.json.id], [201, 'relay-0001'], JSON.stringify(answer.json));
  assert.doesNotMatch(hub.stderr(), /memory .* was missing/);
});

test('a store that holds records but lost its .state/ still refuses a signature from before the loss (guard_reset)', { timeout: 60_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'scout-7');
  const key = (await readKey(keys, 'scout-7'))!;
  const cli = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'note' }, 'already here') });
  assert.equal(cli.code, 0, cli.stderr);
  await rm(path.join(corpus, '.state'), { recursive: true, force: true });
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } });
  const answer = await signedPost(hub, 'scout-7', key, record({ kind: 'note' }, 'could be a replay'));
  assert.deepEqual([answer.status, answer.json.error], [401, 'guard_reset'], JSON.stringify(answer.json));
});

// ---- a read-only mirror ---------------------------------------------------------------------------

test('a read-only mirror without the agent\'s key refuses its signed appends read_only (REST and /mcp), and its banner asks for the primary\'s keys, not keys add', { timeout: 60_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  const primary = 'https://hub.example:7077/mcp';
  const hub = await hubProcess(t, corpus, keys, { args: ['--read-only', '--primary', primary], env: { P_E_RELAY_LOG: 'warn' } });
  const key = randomBytes(32); // the primary's key for scout-7: this mirror has no copy
  const rest = await signedPost(hub, 'scout-7', key, record({ kind: 'note' }, 'sent to a mirror'));
  assert.deepEqual([rest.status, rest.json.error], [403, 'read_only'], JSON.stringify(rest.json));
  assert.match(String(rest.json.message), /primary at https:\/\/hub\.example:7077\/mcp/);

  const call = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'append_relay', arguments: { bytes: record({ kind: 'note' }, 'over MCP') } } }));
  const res = await fetch(`${hub.url}/mcp`, { method: 'POST', body: call, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18', Authorization: authorizationFor('scout-7', key, 'POST', call) } });
  const answer = (await res.json()) as { result?: { isError?: boolean; _meta?: Record<string, { code?: string }> } };
  assert.equal(answer.result?.isError, true, JSON.stringify(answer));
  assert.equal(answer.result?._meta?.['p-e-relay/error']?.code, 'read_only');

  assert.match(hub.stderr(), /copy the agents' key files from the primary/);
  assert.doesNotMatch(hub.stderr(), /keys add/);
  // A wait still needs a key the mirror holds: that is what the keys are for here.
  const waitBody = Buffer.alloc(0);
  const events = await fetch(`${hub.url}/events`, { headers: { Authorization: authorizationFor('scout-7', key, 'GET', waitBody) } });
  assert.equal(events.status, 401);
  await events.body?.cancel();
});

// ---- the record cap and the body cap ---------------------------------------------------------------

/** A record of exactly `size` bytes whose body is quotes and backslashes: in JSON it takes nearly twice that. */
function escapingRecord(size: number): string {
  const head = record({ kind: 'note', from: 'scout-7' }, '');
  return head + '"\\'.repeat(size).slice(0, size - Buffer.byteLength(head));
}

test('a 43,834-byte record of quotes and backslashes lands through /mcp (its JSON is ~87 KB); one over the record cap is refused naming the record, over REST too', { timeout: 60_000 }, async (t) => {
  const h = await startTestHub(t);
  const client = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const big = escapingRecord(43_834);
  assert.equal(Buffer.byteLength(big), 43_834);
  assert.ok(Buffer.byteLength(JSON.stringify(big)) > 65_536, 'its JSON encoding is over 64 KiB');
  const landed = (await client.callTool({ name: 'append_relay', arguments: { bytes: big } })) as CallToolResult;
  assert.notEqual(landed.isError, true, textOf(landed));
  assert.equal(Buffer.compare(await h.store.read('relay-0001').then((b) => splitRecordFile(b).record), Buffer.from(big)), 0, 'stored byte for byte');

  const over = (await client.callTool({ name: 'append_relay', arguments: { bytes: escapingRecord(65_537) } })) as CallToolResult;
  assert.equal(errorCode(over), 'too_large');
  assert.match(textOf(over), /The record is 65537 bytes; over HTTP this hub takes records of at most 65536/);

  const body = Buffer.from(escapingRecord(65_537));
  const rest = await fetch(`${h.url}/relays`, { method: 'POST', body, headers: { Authorization: authorizationFor('scout-7', await h.key('scout-7'), 'POST', body), Accept: 'application/json' } });
  const refusal = (await rest.json()) as { error: string; message: string };
  assert.deepEqual([rest.status, refusal.error], [413, 'too_large']);
  assert.match(refusal.message, /^The record is larger than this hub takes over HTTP \(65536 bytes\)/);
});

test('a /mcp body over the body cap is refused naming the request body, not the record', { timeout: 60_000 }, async (t) => {
  const h = await startTestHub(t, { bodyCap: 4096 });
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_relay', arguments: { id: 'x'.repeat(5000) } } }));
  const res = await fetch(`${h.url}/mcp`, { method: 'POST', body, headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } });
  const refusal = (await res.json()) as { error: string; message: string };
  assert.deepEqual([res.status, refusal.error], [413, 'too_large']);
  assert.match(refusal.message, /^The request body is larger than this hub's body cap \(4096 bytes\)/);
});

test('the bridge carries a 43,834-byte record of quotes and backslashes to the hub', { timeout: 60_000 }, async (t) => {
  const h = await startTestHub(t);
  const { client } = await bridgeClient(t, h.url, 'scout-7', h.keys);
  const landed = (await client.callTool({ name: 'append_relay', arguments: { bytes: escapingRecord(43_834) } })) as CallToolResult;
  assert.notEqual(landed.isError, true, textOf(landed));
  assert.equal((await h.store.read('relay-0001')).length > 43_834, true);
});
