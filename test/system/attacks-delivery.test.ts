/**
 * The second outside review (the delivery surface), one attack each, on a
 * real hub process over loopback. Each test is what an attacker does and
 * what must still be true afterwards; each failed on the code the review
 * attacked. The short form runs in `npm test`; P_E_RELAY_LONG=1 runs the
 * heavy variants (the figures in docs/security.md come from those).
 */
import assert from 'node:assert/strict';
import { appendFile, copyFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import { clientNetwork } from '../../lib/http/connection-slots.js';
import { createLogger } from '../../lib/log.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { openStore } from '../../lib/store/store.js';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { errorCode, record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { hubProcess, LONG, scale } from '../support/reliability-helpers.js';
import { httpClient } from '../support/http-helpers.js';
import { connectionHog } from '../support/connection-hog.js';
import { eventually } from '../support/poll.js';

interface Raw {
  status: number;
  body: string;
}

/** One request on its own connection from `localAddress`; status 0 when the hub closed it or it took over `timeoutMs`. */
function fromAddress(port: number, localAddress: string, options: { method?: string; path?: string; headers?: Record<string, string>; body?: Buffer }, timeoutMs = 5000): Promise<Raw> {
  return new Promise((resolve) => {
    const body = options.body ?? Buffer.alloc(0);
    const r = http.request({ host: '127.0.0.1', port, localAddress, method: options.method ?? 'GET', path: options.path ?? '/relays', agent: false, headers: { 'Content-Length': body.length, ...options.headers } });
    const timer = setTimeout(() => r.destroy(), timeoutMs);
    r.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode!, body: text });
      });
    });
    r.on('error', () => {
      clearTimeout(timer);
      resolve({ status: 0, body: '' });
    });
    r.end(body);
  });
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

// ---- N2 (medium): the connection slots, taken from several addresses --------------------------

// The 9 addresses of the review (one /24), and 9 addresses in 9 networks (past the total, not a network's share).
const LAYOUTS = { 'in one /24': (i: number) => `127.0.0.${i + 2}`, 'in nine /24s': (i: number) => `127.0.${i + 1}.1` };
for (const [layout, addressOf] of Object.entries(LAYOUTS)) test(`N2: while clients on 9 loopback addresses ${layout} hold every connection they can, 20 signed appends from the operator's address land, and /metrics answers`, { timeout: 180_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'alice');
  const alice = (await readKey(keys, 'alice'))!;
  // The short form turns the slots down (the long form attacks the defaults: 2,048, 256 per client).
  const tuned = LONG ? {} : { maxConnections: 200, maxConnectionsPerAddress: 50 };
  const total = LONG ? 2048 : 200;
  const hub = await hubProcess(t, corpus, keys, { tuned, env: { P_E_RELAY_LOG: 'warn' } });
  const hogs = Array.from({ length: 9 }, (_, i) => connectionHog(hub.port, addressOf(i), scale(40, 300)));
  t.after(() => Promise.all(hogs.map((hog) => hog.stop())));
  const held = () => hogs.reduce((n, hog) => n + hog.open(), 0);
  const perClient = LONG ? 256 : 50;
  // Every attacker through its first round of connections, and holding at least what one client may.
  await eventually(() => hogs.every((hog) => hog.tried() >= scale(40, 300)), 'the attackers to open their connections', { timeoutMs: 60_000 });
  await eventually(() => held() >= perClient * 0.9, 'the attackers to hold their slots', { timeoutMs: 60_000 });

  const latencies: number[] = [];
  let landed = 0;
  for (let i = 0; i < 20; i++) {
    const body = Buffer.from(record({ kind: 'note' }, `append ${i} under attack`));
    const started = Date.now();
    const answer = await fromAddress(hub.port, '127.0.0.1', { method: 'POST', body, headers: { Authorization: authorizationFor('alice', alice, 'POST', body) } });
    if (answer.status === 201) {
      landed++;
      latencies.push(Date.now() - started);
    }
  }
  const metrics = await fromAddress(hub.port, '127.0.0.1', { path: '/metrics' });
  const heldAtEnd = held();
  latencies.sort((a, b) => a - b);
  const p50 = latencies.length ? percentile(latencies, 50) : NaN;
  const p99 = latencies.length ? percentile(latencies, 99) : NaN;
  t.diagnostic(`slots from 9 addresses ${layout}: attackers held ${heldAtEnd} of ${total}; signed appends landed ${landed}/20 (p50 ${p50} ms, p99 ${p99} ms); /metrics ${metrics.status}`);
  assert.equal(landed, 20, 'every signed append lands');
  assert.equal(metrics.status, 200, '/metrics answers the operator');
  if (LONG) assert.ok(p99 < 1000, `p99 ${p99} ms`);
});

test('N2: a client network is an IPv4 /24 (mapped into IPv6 too) or an IPv6 /64, however the address is spelled', () => {
  assert.equal(clientNetwork('127.0.0.9'), '127.0.0.0/24');
  assert.equal(clientNetwork('::ffff:127.0.0.9'), '127.0.0.0/24');
  assert.equal(clientNetwork('::1'), clientNetwork('0:0:0:0:0:0:0:1'));
  assert.equal(clientNetwork('2001:db8:0:7::1'), clientNetwork('2001:0db8:0000:0007:ffff:1:2:3'));
  assert.notEqual(clientNetwork('2001:db8:0:7::1'), clientNetwork('2001:db8:0:8::1'));
});

// ---- N3 (medium): a record naming thousands of recipients -----------------------------------------

test('N3: a record whose to: names 65 recipients is refused too_many_recipients, naming the cap, over REST, stdio and the CLI; 64 are stored', { timeout: 60_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'alice');
  const alice = (await readKey(keys, 'alice'))!;
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } });
  const wide = (n: number) => Buffer.from(record({ kind: 'note', to: Array.from({ length: n }, (_, i) => `r${i}`).join(', ') }, `to ${n}`));
  const post = async (body: Buffer) => {
    const res = await fetch(`${hub.url}/relays`, { method: 'POST', body, headers: { Authorization: authorizationFor('alice', alice, 'POST', body), Accept: 'application/json' } });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const refused = await post(wide(65));
  assert.deepEqual([refused.status, refused.json.error], [400, 'too_many_recipients'], JSON.stringify(refused.json));
  assert.match(String(refused.json.message), /65 recipients; at most 64/);
  const stored = await post(wide(64));
  assert.equal(stored.status, 201, JSON.stringify(stored.json));
  const { client } = await stdioClient(t, corpus);
  const stdio = (await client.callTool({ name: 'append_relay', arguments: { bytes: wide(65).toString() } })) as CallToolResult;
  assert.deepEqual([stdio.isError, errorCode(stdio)], [true, 'too_many_recipients'], textOf(stdio));
  const cli = await runCli(['append', '--corpus', corpus], { input: wide(65) });
  assert.notEqual(cli.code, 0);
  assert.match(cli.stderr, /65 recipients; at most 64/);
});

// The key an answerer's recipe gives it: known to every peer before the answer is written (N6, N7).
const CLAIMED_KEY = 'ana/answer/relay-0001';

// ---- N4 (medium): answers deposited before their question -------------------------------------------

test('N4: 30 answers citing ids that do not exist yet leave the 10 broadcasts that later take those ids unanswered', { timeout: 120_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  for (const name of ['mallory', 'ana']) await addKey(keys, name);
  const hub = await hubProcess(t, corpus, keys, { tuned: { limits: { appendsPerSecond: 1000, appendBurst: 1000 } }, env: { P_E_RELAY_LOG: 'warn' } });
  const [mallory, ana] = [await httpClient(t, hub.url, { agent: 'mallory', key: (await readKey(keys, 'mallory'))! }), await httpClient(t, hub.url, { agent: 'ana', key: (await readKey(keys, 'ana'))! })];
  let n = 0;
  // Each record's own text: the hub keys a signed append by its bytes, so the same bytes twice would be one record.
  const append = async (client: typeof ana, headers: Record<string, string>) => {
    const result = (await client.callTool({ name: 'append_relay', arguments: { bytes: record(headers, `text ${n++}`) } })) as CallToolResult;
    assert.notEqual(result.isError, true, textOf(result));
    return (result.structuredContent as { id: string }).id;
  };
  // relay-0001 … relay-0030 are the answers, to relay-0031 … relay-0060: the next ids the broadcasts take are among them.
  for (let i = 0; i < 30; i++) await append(mallory, { kind: 'answer', from: 'mallory', to: 'all', parent: `relay-${String(31 + i).padStart(4, '0')}` });
  const broadcasts: string[] = [];
  for (let i = 0; i < 10; i++) broadcasts.push(await append(ana, { kind: 'question', from: 'ana', to: 'all' }));
  assert.deepEqual(broadcasts, Array.from({ length: 10 }, (_, i) => `relay-${String(31 + i).padStart(4, '0')}`), 'the broadcasts took the cited ids');
  const wait = (await ana.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0030', to: ['all'], timeout_ms: 0 } })) as CallToolResult;
  const answered = (wait.structuredContent as { appeared: { id: string; answers?: number }[] }).appeared.filter((item) => (item.answers ?? 0) > 0);
  t.diagnostic(`broadcasts arriving answered: ${answered.length}/10`);
  assert.deepEqual(answered, []);
});

// ---- N6 (low): one stdio scope for every agent's keys --------------------------------------------------

test('N6: over stdio a key another named agent used first is not taken from the agent named in it; that agent\'s repeat answers its own record', { timeout: 60_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  const [ana, bob] = [(await stdioClient(t, corpus, ['--agent', 'ana'])).client, (await stdioClient(t, corpus, ['--agent', 'bob'])).client];
  const question = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'question', to: 'ana' }, 'which route?') });
  assert.equal(question.stdout.trim(), 'relay-0001', question.stderr);
  const append = async (client: typeof ana, from: string, text: string) => {
    const result = (await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'answer', from, parent: 'relay-0001' }, text), idempotency_key: CLAIMED_KEY } })) as CallToolResult;
    assert.notEqual(result.isError, true, textOf(result));
    return result.structuredContent as { id: string; replayed?: true };
  };
  const squatted = await append(bob, 'bob', 'bob got here first');
  const own = await append(ana, 'ana', 'the north route');
  assert.equal(own.replayed, undefined, `ana's answer is stored, not answered with bob's ${squatted.id}`);
  assert.notEqual(own.id, squatted.id);
  const repeat = await append(ana, 'ana', 'the north route');
  assert.deepEqual([repeat.id, repeat.replayed], [own.id, true], 'her repeat answers her own record');
});

// ---- N7 (low): an Idempotency-Key claimed first by another agent -----------------------------------

interface KeyedAnswer {
  id: string;
  depositedBy: string;
  replayed: boolean;
}

/** An agent's appends under CLAIMED_KEY, signed with its key, through one door of the hub. */
type KeyedDoor = (url: string, agent: string, key: Buffer, t: TestContext) => Promise<(body: string) => Promise<KeyedAnswer>>;

const DOORS: Record<string, { channel: string; open: KeyedDoor }> = {
  REST: {
    channel: 'http',
    open: async (url, agent, key) => {
      let second = 0; // a repeat is signed in another second, or it is a replayed signature
      return async (body) => {
        const bytes = Buffer.from(body);
        const headers = { Authorization: authorizationFor(agent, key, 'POST', bytes, Date.now() + 1000 * second++), 'Idempotency-Key': CLAIMED_KEY, Accept: 'application/json' };
        const res = await fetch(`${url}/relays`, { method: 'POST', body: bytes, headers });
        const json = (await res.json()) as Record<string, unknown>;
        assert.ok(res.status === 200 || res.status === 201, JSON.stringify(json));
        return { id: String(json.id), depositedBy: String(json.depositedBy), replayed: json.replayed === true };
      };
    },
  },
  '/mcp': {
    channel: 'mcp',
    open: async (url, agent, key, t) => {
      const client = await httpClient(t, url, { agent, key });
      return async (body) => {
        const result = await client.callTool({ name: 'append_relay', arguments: { bytes: body, idempotency_key: CLAIMED_KEY } });
        const json = (result.structuredContent ?? {}) as Record<string, unknown>;
        assert.ok(!result.isError, JSON.stringify(result.content));
        return { id: String(json.id), depositedBy: String(json.depositedBy), replayed: json.replayed === true };
      };
    },
  },
};

for (const [door, { channel, open }] of Object.entries(DOORS)) test(`N7 (${door}): a key another agent used first is not taken from the agent that signs it later; that agent's repeat answers its own record`, { timeout: 60_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  for (const name of ['ana', 'bob']) await addKey(keys, name);
  const [ana, bob] = [(await readKey(keys, 'ana'))!, (await readKey(keys, 'bob'))!];
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } });
  const question = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'question', to: 'ana' }, 'which route?') });
  assert.equal(question.stdout.trim(), 'relay-0001', question.stderr);
  const answer = (from: string, text: string) => record({ kind: 'answer', from, parent: 'relay-0001' }, text);

  const [asAna, asBob] = [await open(hub.url, 'ana', ana, t), await open(hub.url, 'bob', bob, t)];

  const squatted = await asBob(answer('bob', 'bob got here first'));
  assert.deepEqual([squatted.depositedBy, squatted.replayed], [`${channel}/bob`, false]);
  const own = await asAna(answer('ana', 'the north route'));
  assert.equal(own.replayed, false, `ana's answer is stored, not answered with bob's ${squatted.id}`);
  assert.notEqual(own.id, squatted.id);
  assert.equal(own.depositedBy, `${channel}/ana`);
  const repeat = await asAna(answer('ana', 'the north route'));
  assert.deepEqual([repeat.id, repeat.replayed], [own.id, true], 'her repeat answers her own record');
});

// ---- N8 (low): a signed 2025-era cancel, replayed ------------------------------------------------

const MCP_2025 = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18' };

test('N8: a signed 2025-era cancel is spent: sent again it is replayed_signature, and a later wait with the same JSON-RPC id keeps running', { timeout: 60_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'alice');
  const alice = (await readKey(keys, 'alice'))!;
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } });
  const post = (body: string, signal?: AbortSignal) =>
    fetch(`${hub.url}/mcp`, { method: 'POST', body, signal, headers: { ...MCP_2025, Authorization: authorizationFor('alice', alice, 'POST', Buffer.from(body)) } });
  const wait = (marker: string) => JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 20_000, kind: marker } } });
  const cancel = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'user pressed stop' } });
  const cancelAuth = authorizationFor('alice', alice, 'POST', Buffer.from(cancel));
  const sendCancel = () => fetch(`${hub.url}/mcp`, { method: 'POST', body: cancel, headers: { ...MCP_2025, Authorization: cancelAuth } });

  // A cancelled call's response is cut off: its fetch fails, which is what the cancel is for.
  const first = post(wait('first')).then((r) => r.text()).catch(() => 'cut off');
  await eventually(async () => (await (await fetch(`${hub.url}/metrics`)).text()).includes('p_e_relay_active_waits 1'), 'the first wait to be held');
  assert.equal((await sendCancel()).status, 202, 'the cancel is accepted');
  await first;
  // The cancelled wait gives its slot back, so the count below is the second wait's alone.
  await eventually(async () => (await (await fetch(`${hub.url}/metrics`)).text()).includes('p_e_relay_active_waits 0'), 'the cancelled wait to free its slot');

  const second = post(wait('second')).catch(() => null); // ends with the hub
  await eventually(async () => (await (await fetch(`${hub.url}/metrics`)).text()).includes('p_e_relay_active_waits 1'), 'the second wait to be held');
  const replay = await sendCancel();
  const replayBody = await replay.text();
  assert.equal(replay.status, 401, `the captured cancel, sent again: ${replayBody}`);
  assert.equal(JSON.parse(replayBody).error, 'replayed_signature');
  const metrics = await (await fetch(`${hub.url}/metrics`)).text();
  assert.match(metrics, /p_e_relay_active_waits 1/, 'the later wait with the same id is still running');
  void second;
});

// ---- N9 (low): what .state/ says, believed without a look -------------------------------------------

test('N9: a .state/issued that says relay-9999 in a store of five records is not believed: the next append is relay-0006, not ids_exhausted', { timeout: 60_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  for (let i = 0; i < 5; i++) assert.equal((await runCli(['append', '--corpus', corpus], { input: record({ kind: 'note' }, `note ${i}`) })).code, 0);
  await appendFile(path.join(corpus, '.state', 'issued'), 'relay-9999\n');
  const next = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'note' }, 'after the scribble') });
  assert.deepEqual([next.code, next.stdout.trim()], [0, 'relay-0006'], next.stderr);
  assert.match(next.stderr, /relay-9999 was issued.*ignoring that line/);
});

test('N9: an index snapshot copied from another corpus with the same ids is not answered from: the records\' own claims are', { timeout: 60_000 }, async (t) => {
  const [a, b] = [await tempStore(t), await tempStore(t)];
  for (const [store, kind] of [[a, 'note'], [b, 'question']] as const) {
    const put = await openStore({ corpus: store.corpus, watch: 'none' });
    for (let i = 0; i < 600; i++) await put.append(Buffer.from(record({ kind, from: 'scout-7' }, `${kind} ${i}`)), { depositedBy: 'test' });
    await put.close();
    await (await openStore({ corpus: store.corpus, watch: 'none' })).close(); // a full scan of 600 records leaves a snapshot
  }
  await copyFile(corpusPaths(a.corpus).snapshot, corpusPaths(b.corpus).snapshot);
  let log = '';
  const store = await openStore({ corpus: b.corpus, watch: 'none', log: createLogger('info', (line) => (log += line)) });
  t.after(() => store.close());
  const newest = (await store.list('relay-0599')).present;
  assert.deepEqual(newest, ['relay-0600']);
  assert.equal((await store.wait({ after: 'relay-0599', timeoutMs: 0 })).appeared[0]?.kind, 'question', log);
  assert.match(log, /not using the index snapshot .*relay-0600's digest/);
});
