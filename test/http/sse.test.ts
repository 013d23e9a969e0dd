/**
 * GET /events (spec §9): one event per record, live and resumed, signed by
 * header or query string, many subscribers, and a slow one that is dropped
 * without holding anyone else up.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { revokeKey } from '../../lib/auth/keys.js';
import { errorCode, record } from '../support/helpers.js';
import { httpClient, openEvents, sign, sseReader, startTestHub, type TestHub } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';

async function append(h: TestHub, headers: Record<string, string> = {}, body = 'hello'): Promise<string> {
  return (await h.store.append(Buffer.from(record(headers, body)), { depositedBy: 'cli/test' })).id;
}

test('each record that lands is one event: id, event: relay, and the appeared metadata as data', async (t) => {
  const h = await startTestHub(t);
  const response = await openEvents(h.url, 'scout-7', await h.key('scout-7'));
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const events = sseReader(response);
  t.after(() => events.close());
  await eventually(() => h.hub.context.gate.streams.active === 1, 'the stream to be open');
  await append(h, { kind: 'note', from: 'a', to: 'b' });
  const event = await events.next();
  assert.equal(event.id, 'relay-0001');
  assert.equal(event.event, 'relay');
  const { depositedAt, ...item } = JSON.parse(event.data);
  assert.deepEqual(item, { id: 'relay-0001', kind: 'note', from: 'a', to: 'b', parent: null, refs: [], depositedBy: 'cli/test', provenance: 'as-received' });
  assert.equal(new Date(depositedAt).toISOString(), depositedAt);
  await append(h);
  assert.equal((await events.next()).id, 'relay-0002');
});

test('resume with Last-Event-ID: the held records after it first, then live ones', async (t) => {
  const h = await startTestHub(t);
  for (let i = 0; i < 3; i++) await append(h);
  const events = sseReader(await openEvents(h.url, 'scout-7', await h.key('scout-7'), { headers: { 'Last-Event-ID': 'relay-0001' } }));
  t.after(() => events.close());
  assert.equal((await events.next()).id, 'relay-0002');
  assert.equal((await events.next()).id, 'relay-0003');
  await append(h);
  assert.equal((await events.next()).id, 'relay-0004');
});

test('resume with ?after=, signed by query parameters as an EventSource would', async (t) => {
  const h = await startTestHub(t);
  for (let i = 0; i < 3; i++) await append(h);
  const auth = /agent=(\S+), ts=(\d+), sig=([0-9a-f]+)/.exec(sign('scout-7', await h.key('scout-7'), 'GET'))!;
  const response = await fetch(`${h.url}/events?after=relay-0002&agent=${auth[1]}&ts=${auth[2]}&sig=${auth[3]}`);
  assert.equal(response.status, 200);
  const events = sseReader(response);
  t.after(() => events.close());
  assert.equal((await events.next()).id, 'relay-0003');
  await append(h);
  assert.equal((await events.next()).id, 'relay-0004');
});

test('/events refuses an unsigned request, a credential sent both ways, and a malformed mark', async (t) => {
  const h = await startTestHub(t);
  const key = await h.key('scout-7');
  const unsigned = await fetch(`${h.url}/events`);
  assert.deepEqual([unsigned.status, ((await unsigned.json()) as { error: string }).error], [401, 'unsigned']);
  const both = await openEvents(h.url, 'scout-7', key, { query: 'agent=scout-7&ts=1&sig=' + 'a'.repeat(64) });
  assert.deepEqual([both.status, ((await both.json()) as { error: string }).error], [401, 'malformed_authorization']);
  const badMark = await openEvents(h.url, 'scout-7', key, { query: 'after=relay-33' });
  assert.deepEqual([badMark.status, ((await badMark.json()) as { error: string }).error], [400, 'bad_id']);
});

test('many subscribers each get every event, in landing order', async (t) => {
  const agents = Array.from({ length: 40 }, (_, i) => `agent-${i}`);
  const h = await startTestHub(t, { agents });
  const readers = await Promise.all(agents.map(async (agent) => sseReader(await openEvents(h.url, agent, await h.key(agent)))));
  t.after(() => Promise.all(readers.map((r) => r.close())));
  await eventually(() => h.hub.context.gate.streams.active === 40, 'every stream to be open');
  for (let i = 0; i < 3; i++) await append(h);
  for (const reader of readers) assert.deepEqual([(await reader.next()).id, (await reader.next()).id, (await reader.next()).id], ['relay-0001', 'relay-0002', 'relay-0003']);
});

test('an agent may hold only so many streams; closing one gives its slot back', async (t) => {
  const h = await startTestHub(t, { limits: { streamsPerAgent: 1 } });
  const key = await h.key('scout-7');
  // Two empty GETs signed in the same second carry the same signature; sign them a second apart.
  const at = Date.now();
  const first = sseReader(await fetch(`${h.url}/events`, { headers: { Authorization: sign('scout-7', key, 'GET', '', at) } }));
  await eventually(() => h.hub.context.gate.streams.active === 1, 'the stream to be open');
  const second = await fetch(`${h.url}/events`, { headers: { Authorization: sign('scout-7', key, 'GET', '', at - 1000) } });
  assert.deepEqual([second.status, ((await second.json()) as { error: string }).error], [429, 'too_many_streams']);
  await first.close();
  await eventually(() => h.hub.context.gate.streams.active === 0, 'the slot to come back');
});

test('an idle stream carries keep-alive comments', async (t) => {
  const h = await startTestHub(t, { sseKeepAliveMs: 50 });
  const events = sseReader(await openEvents(h.url, 'scout-7', await h.key('scout-7')));
  t.after(() => events.close());
  await assert.rejects(events.next(300), /no event in time/);
  assert.ok(events.comments.includes('keep-alive'), `comments seen: ${events.comments.join(', ')}`);
});

test('revoking a key ends the agent\'s open streams and waits, and refuses its next signature', async (t) => {
  const h = await startTestHub(t, { agents: ['leaver', 'stayer'] });
  const leaverKey = await h.key('leaver');
  const stream = sseReader(await openEvents(h.url, 'leaver', leaverKey));
  const other = sseReader(await openEvents(h.url, 'stayer', await h.key('stayer')));
  t.after(() => other.close());
  const client = await httpClient(t, h.url, { agent: 'leaver', key: leaverKey });
  const wait = client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 60_000 } });
  await eventually(() => h.hub.context.gate.streams.active === 2 && h.hub.context.gate.waits.active === 1, 'the stream and the wait to be held');

  await revokeKey(h.keys, 'leaver');
  await stream.untilEnd(3000);
  const ended = await wait;
  assert.equal(ended.isError, true, 'the wait ended early, as a refusal that says why');
  assert.equal(errorCode(ended), 'key_revoked');
  const again = await openEvents(h.url, 'leaver', leaverKey);
  assert.deepEqual([again.status, ((await again.json()) as { error: string }).error], [401, 'unknown_agent']);
  // Another agent's stream is untouched.
  await append(h);
  assert.equal((await other.next()).id, 'relay-0001');
});

test('a subscriber that stops reading is dropped; appends and other subscribers go on', async (t) => {
  const h = await startTestHub(t, { agents: ['slow', 'quick'], sseMaxBufferedBytes: 64 * 1024 });
  const stalled = await openEvents(h.url, 'slow', await h.key('slow')); // never read
  const reader = sseReader(await openEvents(h.url, 'quick', await h.key('quick')));
  t.after(async () => {
    await reader.close();
    await stalled.body?.cancel().catch(() => {});
  });
  await eventually(() => h.hub.context.gate.streams.active === 2, 'both streams to be open');
  // Big claims make big events, so the stalled socket's buffers fill quickly
  // (kernel buffers on loopback took ~4.5 MB here). Every append answers and
  // the reading subscriber sees every record, before and after the drop.
  const wide = 'k'.repeat(60_000);
  let n = 0;
  while (h.hub.context.gate.streams.active === 2) {
    assert.ok(n < 500, 'the stalled subscriber was dropped within 30 MB');
    const id = await append(h, { kind: wide });
    assert.equal((await reader.next()).id, id);
    n++;
  }
  for (let i = 0; i < 3; i++) {
    const id = await append(h);
    assert.equal((await reader.next()).id, id);
  }
  assert.match(await (await fetch(`${h.url}/metrics`)).text(), /^p_e_relay_dropped_subscribers_total 1$/m);
});
