/**
 * Clients that misbehave with held connections: they vanish mid-wait or
 * mid-stream, stop reading an event stream, or arrive in a burst of
 * hundreds. The hub (its own process, counted through /proc/PID) must give
 * back every socket and file descriptor; its resident memory is reported.
 * A stdio server whose client vanishes mid-wait must exit, not linger.
 *
 * The hub runs with a keep-alive of 300 ms and a 64 KiB send buffer cap (the
 * defaults are 15 s and 1 MiB) so that a stalled reader is found in a second.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { test, type TestContext } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import { killed, record, tempStore } from '../support/helpers.js';
import { sseReader } from '../support/http-helpers.js';
import { hubProcess, processStats, rawStdio, scale, type HubProcess } from '../support/reliability-helpers.js';
import { eventually } from '../support/poll.js';

const AGENTS = 16;
const BURST = scale(300, 1000);
const BURSTS = scale(2, 10);

interface Hub extends HubProcess {
  keys: Map<string, Buffer>;
  corpus: string;
  /** Unix seconds already signed with, per agent, method and body. */
  usedTs: Map<string, Set<number>>;
}

async function startHub(t: TestContext): Promise<Hub> {
  const { corpus, keys } = await tempStore(t);
  const keyOf = new Map<string, Buffer>();
  for (let i = 0; i < AGENTS; i++) {
    await addKey(keys, `agent-${i}`);
    keyOf.set(`agent-${i}`, (await readKey(keys, `agent-${i}`))!);
  }
  const big = 100_000;
  const hub = await hubProcess(t, corpus, keys, {
    // Every client here dials from 127.0.0.1, so one address holds the whole
    // burst: lift the per-address connection cap with the other limits.
    tuned: { sseKeepAliveMs: 300, sseMaxBufferedBytes: 64 * 1024, maxConnectionsPerAddress: big, limits: { waitsPerAgent: big, waits: big, streamsPerAgent: big, streams: big, appendsPerSecond: big, appendBurst: big } },
    env: { P_E_RELAY_LOG: 'warn' },
  });
  return { ...hub, keys: keyOf, corpus, usedTs: new Map() };
}

let signatures = 0;
/**
 * A fresh Authorization for a request. GET /events signs an empty body, so
 * two streams opened in one second by one agent would carry one signature:
 * spread them over agents and back over the 60 s window, so that no agent
 * signs the same method and body twice with one ts.
 */
function authorization(hub: Hub, method: string, body: string | Buffer = ''): string {
  const agent = `agent-${signatures++ % AGENTS}`;
  const what = `${agent} ${method} ${createHash('sha256').update(body).digest('hex')}`;
  const used = hub.usedTs.get(what) ?? new Set<number>();
  hub.usedTs.set(what, used);
  let ts = Math.floor(Date.now() / 1000);
  while (used.has(ts)) ts--;
  used.add(ts);
  return authorizationFor(agent, hub.keys.get(agent)!, method, Buffer.from(body), ts * 1000);
}

/** One request on its own connection (no keep-alive pool to hold sockets open), answered in full. */
function request(hub: Hub, method: string, path: string, body = '', headers: Record<string, string> = {}): { done: Promise<{ status: number; text: string }>; req: http.ClientRequest } {
  const req = http.request({ host: '127.0.0.1', port: hub.port, method, path, agent: false, headers: { 'Content-Length': Buffer.byteLength(body), ...headers } });
  const done = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  req.end(body);
  return { done, req };
}

function append(hub: Hub, bytes: string): Promise<{ status: number; text: string }> {
  return request(hub, 'POST', '/relays', bytes, { Authorization: authorization(hub, 'POST', bytes) }).done;
}

function waitCall(hub: Hub, id: number, args: Record<string, unknown>) {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait_for_relay', arguments: args } });
  return request(hub, 'POST', '/mcp', body, { Authorization: authorization(hub, 'POST', body), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' });
}

async function metric(hub: Hub, name: string): Promise<number> {
  const { text } = await request(hub, 'GET', '/metrics').done;
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
}

/**
 * Exercises every path once (an append, a wait, a stream, a read) so that
 * whatever the hub opens lazily is open, then takes the fd count once it
 * holds still.
 */
async function baseline(hub: Hub): Promise<{ fds: number; rssKiB: number }> {
  await append(hub, record({ kind: 'warm-up' }));
  await waitCall(hub, 1, { after: 'relay-0000' }).done;
  const stream = await openStream(hub);
  await stream.next();
  await stream.close();
  await request(hub, 'GET', '/relays').done;
  await eventually(async () => (await metric(hub, 'p_e_relay_active_streams')) === 0, 'the warm-up stream to end');
  let last = -1;
  for (;;) {
    await new Promise((r) => setTimeout(r, 150));
    const { fds, rssKiB } = await processStats(hub.pid);
    if (fds === last) return { fds, rssKiB };
    last = fds;
  }
}

async function openStream(hub: Hub, query = 'after=relay-0000') {
  const res = await fetch(`${hub.url}/events?${query}`, { headers: { Authorization: authorization(hub, 'GET') } });
  assert.equal(res.status, 200);
  return sseReader(res);
}

/** GET /events on a raw socket; `stall` stops reading right after the request is sent. */
function rawStream(hub: Hub, query: string, stall = false): Promise<{ socket: net.Socket; firstEvent: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(hub.port, '127.0.0.1', () => {
      socket.write(`GET /events${query ? `?${query}` : ''} HTTP/1.1\r\nHost: 127.0.0.1:${hub.port}\r\nAuthorization: ${authorization(hub, 'GET')}\r\n\r\n`);
      if (stall) socket.pause();
      let seen = '';
      const firstEvent = new Promise<void>((done) => {
        const onData = (d: Buffer) => {
          seen += d.toString('latin1');
          if (seen.includes('event: relay')) {
            socket.off('data', onData);
            socket.resume(); // keep reading (and discarding) like a live client
            done();
          }
        };
        if (!stall) socket.on('data', onData);
      });
      resolve({ socket, firstEvent });
    });
    socket.on('error', (err) => (socket.connecting ? reject(err) : undefined));
  });
}

/** Waits until the hub holds no more file descriptors than at the baseline, and says what it holds. */
async function backToBaseline(t: TestContext, hub: Hub, base: { fds: number; rssKiB: number }, what: string, peak: { fds: number; rssKiB: number }): Promise<void> {
  await eventually(async () => (await processStats(hub.pid)).fds <= base.fds, `the hub's file descriptors to return to ${base.fds} after ${what}`, { timeoutMs: 15_000 });
  const after = await processStats(hub.pid);
  t.diagnostic(`${what}: fds ${base.fds} → ${peak.fds} at peak → ${after.fds}; RSS ${base.rssKiB} → ${peak.rssKiB} → ${after.rssKiB} KiB`);
  assert.ok(after.fds <= base.fds, `${after.fds} fds, ${base.fds} at the baseline`);
  // A socket's fd closes before the hub's close handler ends its wait or stream: on a busy machine the gauges follow a moment later.
  await eventually(async () => (await metric(hub, 'p_e_relay_active_waits')) === 0, `the hub to end every wait after ${what}`, { timeoutMs: 15_000 });
  await eventually(async () => (await metric(hub, 'p_e_relay_active_streams')) === 0, `the hub to end every stream after ${what}`, { timeoutMs: 15_000 });
}

test(`${BURST} clients vanish in the middle of a wait: the hub ends every wait and gives back every socket`, async (t) => {
  const hub = await startHub(t);
  const base = await baseline(hub);
  const calls = Array.from({ length: BURST }, (_, i) => waitCall(hub, 100 + i, { timeout_ms: 60_000 }));
  for (const c of calls) c.done.catch(() => {}); // they will be cut off
  await eventually(async () => (await metric(hub, 'p_e_relay_active_waits')) === BURST, `${BURST} waits to be blocked`, { timeoutMs: 20_000 });
  const peak = await processStats(hub.pid);
  assert.ok(peak.sockets >= BURST, `the hub holds a socket per wait (${peak.sockets})`);
  for (const c of calls) c.req.destroy();
  await backToBaseline(t, hub, base, `${BURST} waits abandoned`, peak);
});

test('clients vanish in the middle of event streams: every stream ends and its socket is given back', async (t) => {
  const hub = await startHub(t);
  const base = await baseline(hub);
  const count = scale(100, 400);
  // Raw sockets, so that "gone" means the connection is closed, not parked in a client's pool.
  const sockets = await Promise.all(Array.from({ length: count }, () => rawStream(hub, 'after=relay-0000')));
  t.after(() => sockets.forEach((s) => s.socket.destroy()));
  await Promise.all(sockets.map((s) => s.firstEvent)); // each has had its catch-up event: mid-stream
  const peak = await processStats(hub.pid);
  assert.equal(await metric(hub, 'p_e_relay_active_streams'), count);
  for (const s of sockets) s.socket.destroy();
  await backToBaseline(t, hub, base, `${count} streams abandoned`, peak);
});

test('stalled readers of the event stream are dropped; a reader that keeps up gets every event; nothing stays held', async (t) => {
  const hub = await startHub(t);
  const base = await baseline(hub);
  const stalled = scale(20, 100);
  // Raw sockets that ask for the stream and then never read a byte.
  const sockets = await Promise.all(Array.from({ length: stalled }, () => rawStream(hub, '', true).then((s) => s.socket)));
  t.after(() => sockets.forEach((s) => s.destroy()));
  const healthy = await openStream(hub, '');
  await eventually(async () => (await metric(hub, 'p_e_relay_active_streams')) === stalled + 1, 'every stream to be open');
  const open = await processStats(hub.pid);

  // Records whose metadata is large (a 60 KB kind:) make each event large, so the stalled sockets fill.
  const records = 80;
  const seen: string[] = [];
  const reading = (async () => {
    while (seen.length < records) seen.push((await healthy.next(20_000)).id!);
  })();
  for (let i = 0; i < records; i++) assert.equal((await append(hub, record({ kind: `k${i}-${'x'.repeat(60_000)}` }, `big ${i}`))).status, 201);
  await reading;
  assert.deepEqual(seen, Array.from({ length: records }, (_, i) => `relay-${String(i + 2).padStart(4, '0')}`), 'the reader that keeps up gets every event, in order');
  await eventually(async () => (await metric(hub, 'p_e_relay_dropped_subscribers_total')) === stalled, `all ${stalled} stalled readers to be dropped`, { timeoutMs: 15_000 });
  const filled = await processStats(hub.pid);
  await healthy.close();
  await backToBaseline(t, hub, base, `${stalled} stalled readers dropped`, { fds: open.fds, rssKiB: Math.max(open.rssKiB, filled.rssKiB) });
});

test(`bursts of ${BURST} waits, each woken by one append: every one is answered and every socket given back, burst after burst`, async (t) => {
  const hub = await startHub(t);
  const base = await baseline(hub);
  for (let round = 0; round < BURSTS; round++) {
    const after = `relay-${String(round + 1).padStart(4, '0')}`;
    const calls = Array.from({ length: BURST }, (_, i) => waitCall(hub, 1000 + i, { after, timeout_ms: 60_000 }));
    await eventually(async () => (await metric(hub, 'p_e_relay_active_waits')) === BURST, `${BURST} waits to be blocked`, { timeoutMs: 20_000 });
    const peak = await processStats(hub.pid);
    assert.equal((await append(hub, record({ kind: 'wake-up' }))).status, 201);
    const answers = await Promise.all(calls.map((c) => c.done));
    for (const a of answers) {
      assert.equal(a.status, 200);
      const sc = (JSON.parse(a.text) as { result: { structuredContent: { appeared: { id: string }[] } } }).result.structuredContent;
      assert.deepEqual(sc.appeared.map((r) => r.id), [`relay-${String(round + 2).padStart(4, '0')}`]);
    }
    await backToBaseline(t, hub, base, `burst ${round + 1}: ${BURST} waits answered`, peak);
  }
});

test('a stdio server whose client closes its end mid-wait answers the wait at once and exits; calls in flight are still answered', async (t) => {
  const { corpus } = await tempStore(t);
  const server = await rawStdio(t, corpus, {}, ['--agent', 'ana']);
  const wait = server.request('tools/call', { name: 'wait_for_relay', arguments: { timeout_ms: 90_000 } });
  await server.request('tools/list'); // the wait is in
  const append = server.request('tools/call', { name: 'append_relay', arguments: { bytes: record({ kind: 'sent-just-before-eof' }) } });
  const started = Date.now();
  server.child.stdin!.end(); // a script that piped its requests in, or a client done talking
  const answered = (await wait).result?.structuredContent as { appeared: unknown[]; timedOut: boolean };
  assert.deepEqual([answered.appeared, answered.timedOut], [[], false], 'the wait ends with nothing new, not at its timeout');
  assert.equal(((await append).result?.structuredContent as { id: string }).id, 'relay-0001', 'the append in flight is answered');
  await killed(server.child);
  assert.equal(server.child.exitCode, 0);
  t.diagnostic(`stdio server answered and exited ${Date.now() - started} ms after its client closed stdin mid-wait`);
});

test('a stdio server whose client vanishes entirely (both pipes gone) mid-wait exits at once, cleanly', async (t) => {
  const { corpus } = await tempStore(t);
  const server = await rawStdio(t, corpus, { P_E_RELAY_LOG: 'info' }, ['--agent', 'ana']);
  server.request('tools/call', { name: 'wait_for_relay', arguments: { timeout_ms: 90_000 } }).catch(() => {});
  await server.request('tools/list');
  const started = Date.now();
  server.child.stdout!.destroy();
  server.child.stdin!.destroy();
  await Promise.race([killed(server.child), new Promise((r) => setTimeout(r, 5000))]);
  assert.ok(!server.alive(), 'the server exited');
  assert.equal(server.child.exitCode, 0);
  assert.doesNotMatch(server.stderr(), /Error|EPIPE/, 'no crash and no stack trace');
  t.diagnostic(`stdio server exited ${Date.now() - started} ms after its client vanished mid-wait`);
});
