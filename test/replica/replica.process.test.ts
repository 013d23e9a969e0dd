/**
 * A local read replica that forwards writes (docs/scaling.md): a real
 * primary hub on loopback HTTP, a replica corpus in a separate directory
 * filled only by the real `p-e-relay mirror --every` (rsync), and the real
 * SDK client over stdio to `serve --forward` on the replica. The replica
 * shares no file with the primary: appends reach it over the signed HTTP
 * door, records come back through rsync.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { BIN, errorCode, killed, record, runCli, stdioClient, tempDir, textOf } from '../support/helpers.js';
import { hubStore } from '../support/bridge-helpers.js';
import { httpClient, sign } from '../support/http-helpers.js';
import { spawnHub, type HubProcess } from '../support/hub-process.js';
import { needs } from '../support/needs.js';

const RSYNC = needs('rsync');
const QUIET = { P_E_RELAY_LOG: 'warn' };

interface Bed {
  primary: { corpus: string; keys: string };
  hub: HubProcess;
  replica: string;
  client: Client;
  stderr(): string;
  /** Starts the primary hub again on the port it had (after hub.stop()). */
  restart(): Promise<HubProcess>;
}

/** A primary hub with a key for alice, and a mirror of it kept filled every 100 ms, with alice's key copied there. */
async function primaryAndMirror(t: TestContext) {
  const primary = await hubStore(t, { agents: ['alice'] });
  // No checkpoint records: the tests count the primary's records exactly.
  const args = ['--checkpoint-every', '0'];
  let hub = await spawnHub({ ...primary, args, cleanup: t });
  const dir = await tempDir(t, 'pe-replica-');
  const replica = path.join(dir, 'corpus');
  const keys = path.join(dir, 'keys');
  await mkdir(keys, { mode: 0o700 });
  await copyFile(path.join(primary.keys, 'alice.key'), path.join(keys, 'alice.key'));
  const first = await runCli(['mirror', '--corpus', replica, primary.corpus], { env: QUIET });
  assert.equal(first.code, 0, first.stderr);
  const follower = spawn(process.execPath, [BIN, 'mirror', '--every', '100', '--corpus', replica, primary.corpus], { env: { ...process.env, ...QUIET }, stdio: 'ignore' });
  t.after(async () => {
    follower.kill('SIGTERM');
    await killed(follower);
  });
  const restart = async () => (hub = await spawnHub({ ...primary, args, port: hub.port, cleanup: t }));
  return { primary, get hub() { return hub; }, replica, keys, restart };
}

/** primaryAndMirror, and alice's stdio server on the mirror. */
async function replicaBed(t: TestContext): Promise<Bed> {
  const bed = await primaryAndMirror(t);
  const { client, stderr } = await stdioClient(t, bed.replica, ['--forward', '--primary', bed.hub.url, '--agent', 'alice', '--keys', bed.keys]);
  return Object.assign(bed, { client, stderr });
}

function append(client: Client, bytes: string) {
  return client.callTool({ name: 'append_relay', arguments: { bytes } });
}

/** The primary's record files, by name. */
async function primaryRecords(bed: { primary: { corpus: string } }): Promise<string[]> {
  return (await readdir(bed.primary.corpus)).filter((name) => /^relay-\d{4}$/.test(name)).sort();
}

test('an append on the replica is stored once on the primary, signed as the agent, and its id answers on the replica at once', RSYNC, async (t) => {
  const bed = await replicaBed(t);
  const result = await append(bed.client, record({ kind: 'note', from: 'alice' }, 'through the replica'));
  assert.equal(result.isError, undefined, textOf(result));
  const answer = result.structuredContent as { id: string; depositedBy: string };
  assert.equal(answer.id, 'relay-0001');
  assert.equal(answer.depositedBy, 'mcp/alice', 'the primary verified alice\'s signature');
  assert.deepEqual(await primaryRecords(bed), ['relay-0001']);
  const onPrimary = await readFile(path.join(bed.primary.corpus, 'relay-0001'), 'utf8');
  assert.match(onPrimary, /^provenance: as-received\ndeposited-by: mcp\/alice\n/);
  assert.match(onPrimary, /\nidempotency-key: sha256\/[0-9a-f]{64}\n---\n@p-e\/x0\nkind: note\nfrom: alice\n\nthrough the replica$/);
  // The append answered once the record had reached the mirror: no wait for the next sync here.
  const got = await bed.client.callTool({ name: 'get_relay', arguments: { id: 'relay-0001' } });
  assert.equal(textOf(got), onPrimary);
});

test('the replica\'s waits answer a forwarded append\'s own record: a look after the mark before it finds it at once, and its id is a mark there for the replies the primary stores', RSYNC, async (t) => {
  const bed = await replicaBed(t);
  const result = await append(bed.client, record({ kind: 'question', from: 'alice', to: 'bob' }, 'which route?'));
  assert.equal(result.isError, undefined, textOf(result));
  const { id, unknownRecipients } = result.structuredContent as { id: string; unknownRecipients?: string[] };
  assert.deepEqual(unknownRecipients, ['bob'], 'the primary\'s answer, as the primary gave it (bob never served or signed there)');
  // No sync awaited here: the append answered once its record had reached the mirror.
  const looked = (await bed.client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 0 } })).structuredContent as { appeared: { id: string; from: string }[]; timedOut: boolean };
  assert.deepEqual(looked.appeared.map((r) => [r.id, r.from]), [[id, 'alice']]);
  // The id the primary gave is not ahead of the replica (id_ahead): a wait for its replies starts on it at once.
  const replies = bed.client.callTool({ name: 'wait_for_relay', arguments: { after: id, replies_to: id, timeout_ms: 30_000 } });
  const cli = await runCli(['append', '--corpus', bed.primary.corpus], { input: record({ kind: 'answer', from: 'bob', to: 'alice', parent: id }, 'the north one'), env: QUIET });
  assert.equal(cli.code, 0, cli.stderr);
  const answered = (await replies) as { isError?: boolean; structuredContent?: { appeared: { id: string; parent: string | null }[] } };
  assert.equal(answered.isError, undefined, textOf(answered as never));
  assert.deepEqual(answered.structuredContent!.appeared.map((r) => [r.id, r.parent]), [['relay-0002', id]]);
});

test('a waiter on the replica wakes for a record appended on the primary', RSYNC, async (t) => {
  const bed = await replicaBed(t);
  const waiting = bed.client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 30_000 } });
  const cli = await runCli(['append', '--corpus', bed.primary.corpus], { input: record({ kind: 'note', from: 'bob', to: 'alice' }, 'from the primary'), env: QUIET });
  assert.equal(cli.code, 0, cli.stderr);
  const s = (await waiting).structuredContent as { appeared: { id: string; from: string }[]; timedOut: boolean };
  assert.equal(s.timedOut, false);
  assert.deepEqual(s.appeared.map((r) => [r.id, r.from]), [['relay-0001', 'bob']]);
});

test('with the primary down, reads and waits answer from the replica, an append is refused hub_unreachable and nothing is queued; once it is back, the same append is stored once', RSYNC, async (t) => {
  const bed = await replicaBed(t);
  assert.equal((await append(bed.client, record({ from: 'alice' }, 'before'))).isError, undefined);
  await bed.hub.stop();

  const listed = await bed.client.callTool({ name: 'list_relays', arguments: {} });
  assert.match(textOf(listed), /^present \(1\): relay-0001$/m);
  assert.match(textOf(await bed.client.callTool({ name: 'get_relay', arguments: { id: 'relay-0001' } })), /\n\nbefore$/);
  const looked = (await bed.client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 0 } })).structuredContent as { appeared: { id: string }[] };
  assert.deepEqual(looked.appeared.map((r) => r.id), ['relay-0001']);

  const bytes = record({ from: 'alice' }, 'during the outage');
  const refused = await append(bed.client, bytes);
  assert.equal(refused.isError, true);
  assert.equal(errorCode(refused), 'hub_unreachable');
  const details = (refused._meta as Record<string, { idempotencyKey?: string; cause?: string }>)['p-e-relay/error']!;
  assert.equal(details.cause, 'ECONNREFUSED');
  assert.match(details.idempotencyKey ?? '', /^sha256\//, 'the refusal names the key the same append is sent again under');

  await bed.restart();
  assert.deepEqual(await primaryRecords(bed), ['relay-0001'], 'nothing was queued to land later');
  const again = await append(bed.client, bytes);
  assert.equal(again.isError, undefined, textOf(again));
  assert.equal((again.structuredContent as { id: string }).id, 'relay-0002');
  const retried = await bed.client.callTool({ name: 'append_relay', arguments: { bytes, idempotency_key: details.idempotencyKey } });
  assert.deepEqual([(retried.structuredContent as { id: string }).id, (retried.structuredContent as { replayed?: boolean }).replayed], ['relay-0002', true]);
  assert.deepEqual(await primaryRecords(bed), ['relay-0001', 'relay-0002']);
});

test('over HTTP a replica forwards each signed append as its signer, over /mcp and REST alike, and answers its reads and waits', RSYNC, async (t) => {
  const bed = await primaryAndMirror(t);
  const replicaHub = await spawnHub({ corpus: bed.replica, keys: bed.keys, args: ['--forward', '--primary', bed.hub.url], until: 'scanned', cleanup: t });
  assert.match(replicaHub.stderr(), /replica: .*primary at http:/);
  const key = await readFile(path.join(bed.keys, 'alice.key'));
  const client = await httpClient(t, replicaHub.url, { agent: 'alice', key: Buffer.from(key.toString('utf8').trim()) });
  const waiting = client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 30_000 } });
  const viaMcp = await client.callTool({ name: 'append_relay', arguments: { bytes: record({ from: 'alice' }, 'over /mcp') } });
  assert.equal(viaMcp.isError, undefined, textOf(viaMcp));
  assert.equal((viaMcp.structuredContent as { id: string }).id, 'relay-0001');
  assert.deepEqual(((await waiting).structuredContent as { appeared: { id: string }[] }).appeared.map((r) => r.id), ['relay-0001']);
  const body = record({ from: 'alice' }, 'over REST');
  const viaRest = await fetch(`${replicaHub.url}/relays`, { method: 'POST', body, headers: { Accept: 'application/json', Authorization: sign('alice', Buffer.from(key.toString('utf8').trim()), 'POST', body) } });
  assert.equal(viaRest.status, 201, await viaRest.clone().text());
  assert.equal(((await viaRest.json()) as { id: string }).id, 'relay-0002');
  assert.deepEqual(await primaryRecords(bed), ['relay-0001', 'relay-0002']);
  // The primary verified alice's own signature, sent on by the replica to the route she used: deposited as if she had sent it there.
  assert.match(await readFile(path.join(bed.primary.corpus, 'relay-0001'), 'utf8'), /^provenance: as-received\ndeposited-by: mcp\/alice\n/);
  assert.match(await readFile(path.join(bed.primary.corpus, 'relay-0002'), 'utf8'), /^provenance: as-received\ndeposited-by: http\/alice\n/);
  assert.equal(await (await fetch(`${replicaHub.url}/relays/relay-0002`)).text(), await readFile(path.join(bed.primary.corpus, 'relay-0002'), 'utf8'));
});

/** Another mirror of the same primary, kept filled, with alice's key copied there, served as a forwarding replica. */
async function secondReplica(t: TestContext, bed: Awaited<ReturnType<typeof primaryAndMirror>>): Promise<HubProcess> {
  const dir = await tempDir(t, 'pe-replica-b-');
  const corpus = path.join(dir, 'corpus');
  await runCli(['mirror', '--corpus', corpus, bed.primary.corpus], { env: QUIET });
  const follower = spawn(process.execPath, [BIN, 'mirror', '--every', '100', '--corpus', corpus, bed.primary.corpus], { env: { ...process.env, ...QUIET }, stdio: 'ignore' });
  t.after(async () => {
    follower.kill('SIGTERM');
    await killed(follower);
  });
  return spawnHub({ corpus, keys: bed.keys, args: ['--forward', '--primary', bed.hub.url], until: 'scanned', cleanup: t });
}

test('a signature is spent once across the primary and its replicas: one captured signed append, sent to replica A, replica B and the primary, stores one record', RSYNC, async (t) => {
  const bed = await primaryAndMirror(t);
  const a = await spawnHub({ corpus: bed.replica, keys: bed.keys, args: ['--forward', '--primary', bed.hub.url], until: 'scanned', cleanup: t });
  const b = await secondReplica(t, bed);
  const key = Buffer.from((await readFile(path.join(bed.keys, 'alice.key'), 'utf8')).trim());
  // Over REST: the same request, byte for byte, to each door.
  const body = record({ from: 'alice' }, 'captured over REST');
  const rest = { method: 'POST', body, headers: { Accept: 'application/json', Authorization: sign('alice', key, 'POST', body) } };
  const statuses: [number, string][] = [];
  for (const door of [a, b, bed.hub]) {
    const response = await fetch(`${door.url}/relays`, rest);
    statuses.push([response.status, ((await response.json()) as { error?: string; id?: string }).error ?? 'stored']);
  }
  assert.deepEqual(statuses, [[201, 'stored'], [401, 'replayed_signature'], [401, 'replayed_signature']]);
  // Over /mcp: one signed tools/call, to each door.
  const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'append_relay', arguments: { bytes: record({ from: 'alice' }, 'captured over /mcp') } } });
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18', Authorization: sign('alice', key, 'POST', call) };
  const answers: string[] = [];
  for (const door of [a, b, bed.hub]) {
    const response = await fetch(`${door.url}/mcp`, { method: 'POST', body: call, headers });
    const text = await response.text();
    const json = (response.ok ? JSON.parse(text.startsWith('{') ? text : text.split('\n').find((line) => line.startsWith('data:'))!.slice(5)) : JSON.parse(text)) as { result?: { isError?: boolean; structuredContent?: { id?: string }; _meta?: Record<string, { code?: string }> }; error?: string };
    answers.push(json.error ?? (json.result?.isError ? String(Object.values(json.result._meta ?? {})[0]?.code) : `stored ${json.result?.structuredContent?.id}`));
  }
  assert.deepEqual(answers, ['stored relay-0002', 'replayed_signature', 'replayed_signature']);
  assert.deepEqual(await primaryRecords(bed), ['relay-0001', 'relay-0002'], 'one record per request, never three');
});

test('two replicas forwarding one agent\'s keyed append in the same second: each request is its own (no replayed_signature), and its key stores one record', RSYNC, async (t) => {
  const bed = await primaryAndMirror(t);
  const a = await spawnHub({ corpus: bed.replica, keys: bed.keys, args: ['--forward', '--primary', bed.hub.url], until: 'scanned', cleanup: t });
  const b = await secondReplica(t, bed);
  const key = Buffer.from((await readFile(path.join(bed.keys, 'alice.key'), 'utf8')).trim());
  const body = record({ from: 'alice' }, 'one keyed append, tried through two replicas');
  const send = (door: HubProcess, atMs: number) => fetch(`${door.url}/relays`, { method: 'POST', body, headers: { Accept: 'application/json', 'Idempotency-Key': 'alice/q/7', Authorization: sign('alice', key, 'POST', body, atMs) } });
  const now = Date.now();
  const [first, second] = await Promise.all([send(a, now), send(b, now - 1000)]);
  const answers = await Promise.all([first, second].map(async (r) => [r.status, ((await r.json()) as { id?: string; error?: string }).id ?? 'refused'] as const));
  assert.deepEqual(answers.map(([, id]) => id), ['relay-0001', 'relay-0001'], JSON.stringify(answers));
  assert.deepEqual(answers.map(([status]) => status).sort(), [200, 201]);
  assert.deepEqual(await primaryRecords(bed), ['relay-0001']);
});

test('over HTTP a replica whose primary is down answers its reads and refuses a REST append 502 hub_unreachable, naming the key to send it again under', RSYNC, async (t) => {
  const bed = await primaryAndMirror(t);
  const replicaHub = await spawnHub({ corpus: bed.replica, keys: bed.keys, args: ['--forward', '--primary', bed.hub.url], until: 'scanned', cleanup: t });
  const key = Buffer.from((await readFile(path.join(bed.keys, 'alice.key'), 'utf8')).trim());
  await bed.hub.stop();
  assert.equal((await fetch(`${replicaHub.url}/relays`)).status, 200);
  const body = record({ from: 'alice' }, 'while the primary is down');
  const refused = await fetch(`${replicaHub.url}/relays`, { method: 'POST', body, headers: { Accept: 'application/json', 'Idempotency-Key': 'alice/q/1', Authorization: sign('alice', key, 'POST', body) } });
  assert.equal(refused.status, 502);
  const json = (await refused.json()) as { error: string; idempotencyKey: string; cause: string };
  assert.deepEqual([json.error, json.idempotencyKey, json.cause], ['hub_unreachable', 'alice/q/1', 'ECONNREFUSED']);
  await bed.restart();
  assert.deepEqual(await primaryRecords(bed), [], 'nothing was queued to land later');
});

test('serve --forward refuses, as bad usage, a replica with no agent to sign as or no primary URL to send to', async (t) => {
  const dir = await tempDir(t);
  const noAgent = await runCli(['serve', '--forward', '--primary', 'http://127.0.0.1:7077', '--corpus', dir], { env: { ...QUIET, P_E_RELAY_AGENT: '' } });
  assert.equal(noAgent.code, 2);
  assert.match(noAgent.stderr, /--agent NAME/);
  const noUrl = await runCli(['serve', '--forward', '--primary', 'hub.example:/srv/corpus', '--agent', 'alice', '--corpus', dir], { env: QUIET });
  assert.equal(noUrl.code, 2);
  assert.match(noUrl.stderr, /not an http:\/\/ or https:\/\/ URL/);
});
