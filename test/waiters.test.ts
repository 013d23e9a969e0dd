import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RecordMeta } from '../lib/model/record-index.js';
import { DEFAULT_WAIT_MS, MAX_WAIT_MS, Waiters, appeared, clampWait } from '../lib/store/waiters.js';

function meta(n: number): RecordMeta {
  return { id: `relay-${String(n).padStart(4, '0')}`, kind: 'note', from: 'a', to: null, depositedBy: 'mcp', provenance: 'as-received', depositedAt: '2026-11-30T00:00:00.000Z', digest: 'sha256:00' };
}

/** A tiny stand-in for the store's held records, fed by `land`. */
function world(waiters: Waiters, initial: number[] = []) {
  const held = initial.map(meta);
  return {
    heldAfter: (after: number) => held.filter((m) => Number(m.id.slice(6)) > after),
    land(n: number) {
      held.push(meta(n));
      waiters.notify(n, meta(n));
    },
  };
}

const until = (predicate: () => boolean) =>
  new Promise<void>((resolve) => {
    const check = () => (predicate() ? resolve() : setImmediate(check));
    check();
  });

test('clampWait: default 30000, capped at 90000, never negative', () => {
  assert.equal(DEFAULT_WAIT_MS, 30_000);
  assert.equal(MAX_WAIT_MS, 90_000);
  assert.equal(clampWait(undefined), 30_000);
  assert.equal(clampWait(Number.NaN), 30_000);
  assert.equal(clampWait(Infinity), 30_000);
  assert.equal(clampWait(5), 5);
  assert.equal(clampWait(90_001), 90_000);
  assert.equal(clampWait(1e12), 90_000);
  assert.equal(clampWait(-5), 0);
  assert.equal(clampWait(12.7), 12);
});

test('appeared keeps the fields a wait reports', () => {
  assert.deepEqual(appeared(meta(3)), { id: 'relay-0003', kind: 'note', from: 'a', to: null, depositedBy: 'mcp', provenance: 'as-received' });
});

test('with after, held records after the mark return at once', async () => {
  const waiters = new Waiters();
  const w = world(waiters, [1, 2, 3]);
  const result = await waiters.wait({ after: 1, timeoutMs: 60_000 }, w.heldAfter);
  assert.deepEqual(result.appeared.map((r) => r.id), ['relay-0002', 'relay-0003']);
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0);
});

test('with after and nothing newer, it blocks until a record after the mark lands', async () => {
  const waiters = new Waiters();
  const w = world(waiters, [1, 2]);
  const pending = waiters.wait({ after: 2, timeoutMs: 60_000 }, w.heldAfter);
  assert.equal(waiters.count, 1);
  w.land(3);
  const result = await pending;
  assert.deepEqual(result.appeared.map((r) => r.id), ['relay-0003']);
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0, 'the waiter unsubscribed');
});

test('with after, a fill-in at or below the mark does not wake it', async () => {
  const waiters = new Waiters();
  const w = world(waiters, [3]);
  const pending = waiters.wait({ after: 3, timeoutMs: 60_000 }, w.heldAfter);
  w.land(2);
  assert.equal(waiters.count, 1, 'still waiting');
  w.land(4);
  assert.deepEqual((await pending).appeared.map((r) => r.id), ['relay-0004']);
});

test('relay-0000 (after 0) means from the start', async () => {
  const waiters = new Waiters();
  const w = world(waiters, [1]);
  assert.deepEqual((await waiters.wait({ after: 0, timeoutMs: 60_000 }, w.heldAfter)).appeared.map((r) => r.id), ['relay-0001']);
});

test('without after, held records are ignored and the next record to land, whatever its id, wakes it', async () => {
  const waiters = new Waiters();
  const w = world(waiters, [5, 6]);
  const pending = waiters.wait({ after: null, timeoutMs: 60_000 }, w.heldAfter);
  assert.equal(waiters.count, 1);
  w.land(2); // a mirror's late fill-in of an old id counts
  assert.deepEqual((await pending).appeared.map((r) => r.id), ['relay-0002']);
});

test('a burst of records in one turn comes back as one answer', async () => {
  const waiters = new Waiters();
  const w = world(waiters);
  const pending = waiters.wait({ after: null, timeoutMs: 60_000 }, w.heldAfter);
  w.land(1);
  w.land(2);
  w.land(3);
  assert.deepEqual((await pending).appeared.map((r) => r.id), ['relay-0001', 'relay-0002', 'relay-0003']);
});

test('every waiter is woken by one record', async () => {
  const waiters = new Waiters();
  const w = world(waiters);
  const all = [1, 2, 3].map(() => waiters.wait({ after: null, timeoutMs: 60_000 }, w.heldAfter));
  assert.equal(waiters.count, 3);
  w.land(1);
  for (const result of await Promise.all(all)) assert.deepEqual(result.appeared.map((r) => r.id), ['relay-0001']);
});

test('when the time runs out it answers timedOut with nothing', async () => {
  const waiters = new Waiters();
  const w = world(waiters);
  const result = await waiters.wait({ after: null, timeoutMs: 30 }, w.heldAfter);
  assert.deepEqual(result.appeared, []);
  assert.equal(result.timedOut, true);
  assert.ok(result.waitedMs >= 25, `waited ${result.waitedMs} ms`);
  assert.equal(waiters.count, 0);
});

test('a timeout of 0 returns at once', async () => {
  const waiters = new Waiters();
  const result = await waiters.wait({ after: 3, timeoutMs: 0 }, world(waiters, [1]).heldAfter);
  assert.equal(result.timedOut, true);
});

test('an abort ends the wait: nothing appeared, not timed out, unsubscribed', async () => {
  const waiters = new Waiters();
  const w = world(waiters);
  const ac = new AbortController();
  const pending = waiters.wait({ after: null, timeoutMs: 60_000, signal: ac.signal }, w.heldAfter);
  ac.abort();
  const result = await pending;
  assert.deepEqual(result.appeared, []);
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0);
});

test('a signal already aborted returns at once', async () => {
  const waiters = new Waiters();
  const result = await waiters.wait({ after: null, timeoutMs: 60_000, signal: AbortSignal.abort() }, world(waiters).heldAfter);
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0);
});

test('onProgress is called while it blocks, with the time waited, and stops after', async () => {
  const waiters = new Waiters();
  const w = world(waiters);
  const calls: number[] = [];
  const pending = waiters.wait({ after: null, timeoutMs: 60_000, progressEveryMs: 10, onProgress: (ms) => calls.push(ms) }, w.heldAfter);
  await until(() => calls.length >= 2);
  w.land(1);
  await pending;
  const seen = calls.length;
  assert.ok(calls[1]! >= calls[0]!);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(calls.length, seen, 'no progress after the answer');
});

test('subscribe hands every notified record to the listener until unsubscribed', () => {
  const waiters = new Waiters();
  const got: number[] = [];
  const unsubscribe = waiters.subscribe((n) => got.push(n));
  waiters.notify(1, meta(1));
  unsubscribe();
  waiters.notify(2, meta(2));
  assert.deepEqual(got, [1]);
  assert.equal(waiters.count, 0);
});
