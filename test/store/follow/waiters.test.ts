import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { matches, parseFilter, parseRecipients, type RecordFilter } from '../../../lib/model/filter.js';
import { idShape } from '../../../lib/model/ids.js';
import type { RecordMeta } from '../../../lib/model/record-index.js';
import { subscribe, type HeldRecord, type RecordFeed, type StoreEvents } from '../../../lib/store/follow/subscription.js';
import { DEFAULT_WAIT_MS, MAX_WAIT_MS, Waiters, appeared, clampWait } from '../../../lib/store/follow/waiters.js';

function meta(n: number, to: string | null = null): RecordMeta {
  return { id: `relay-${String(n).padStart(4, '0')}`, kind: 'note', from: 'a', to, parent: null, refs: [], depositedBy: 'mcp', provenance: 'as-received', depositedAt: '2026-11-30T00:00:00.000Z', digest: 'sha256:00' };
}

/** A tiny stand-in for the store: its held records and its 'record' events, fed by `land`. */
class World extends EventEmitter<StoreEvents> implements RecordFeed {
  readonly ready = Promise.resolve();
  readonly waiters = new Waiters(this);
  private readonly held: HeldRecord[];

  constructor(initial: number[] = []) {
    super();
    this.held = initial.map((n) => ({ n, meta: meta(n) }));
  }

  eachHeldAfter(after: number, filter: RecordFilter | null = null): HeldRecord[] {
    return this.held.filter((r) => r.n > after && this.matches(r.n, filter)).sort((a, b) => a.n - b.n);
  }

  matches(n: number, filter: RecordFilter | null): boolean {
    const m = this.held.find((r) => r.n === n)?.meta;
    return m !== undefined && matches(filter, { kind: m.kind, from: m.from, recipients: parseRecipients(m.to), named: [] });
  }

  land(n: number, to: string | null = null): void {
    this.held.push({ n, meta: meta(n, to) });
    this.emit('record', meta(n, to), n);
  }
}

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
  assert.deepEqual(appeared(meta(3)), { id: 'relay-0003', kind: 'note', from: 'a', to: null, parent: null, refs: [], depositedBy: 'mcp', provenance: 'as-received', depositedAt: '2026-11-30T00:00:00.000Z' });
});

test('with after, held records after the mark return at once', async () => {
  const w = new World([1, 2, 3]);
  const { waiters } = w;
  const result = await waiters.wait({ after: 1, timeoutMs: 60_000 });
  assert.deepEqual(result.appeared.map((r) => r.id), ['relay-0002', 'relay-0003']);
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0);
});

test('with after and nothing newer, it blocks until a record after the mark lands', async () => {
  const w = new World([1, 2]);
  const { waiters } = w;
  const pending = waiters.wait({ after: 2, timeoutMs: 60_000 });
  assert.equal(waiters.count, 1);
  w.land(3);
  const result = await pending;
  assert.deepEqual(result.appeared.map((r) => r.id), ['relay-0003']);
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0, 'the waiter unsubscribed');
});

test('with after, a fill-in at or below the mark does not wake it', async () => {
  const w = new World([3]);
  const { waiters } = w;
  const pending = waiters.wait({ after: 3, timeoutMs: 60_000 });
  w.land(2);
  assert.equal(waiters.count, 1, 'still waiting');
  w.land(4);
  assert.deepEqual((await pending).appeared.map((r) => r.id), ['relay-0004']);
});

test('relay-0000 (after 0) means from the start', async () => {
  const w = new World([1]);
  const { waiters } = w;
  assert.deepEqual((await waiters.wait({ after: 0, timeoutMs: 60_000 })).appeared.map((r) => r.id), ['relay-0001']);
});

test('without after, held records are ignored and the next record to land, whatever its id, wakes it', async () => {
  const w = new World([5, 6]);
  const { waiters } = w;
  const pending = waiters.wait({ after: null, timeoutMs: 60_000 });
  assert.equal(waiters.count, 1);
  w.land(2); // a mirror's late fill-in of an old id counts
  assert.deepEqual((await pending).appeared.map((r) => r.id), ['relay-0002']);
});

test('a burst of records in one turn comes back as one answer', async () => {
  const w = new World();
  const { waiters } = w;
  const pending = waiters.wait({ after: null, timeoutMs: 60_000 });
  w.land(1);
  w.land(2);
  w.land(3);
  assert.deepEqual((await pending).appeared.map((r) => r.id), ['relay-0001', 'relay-0002', 'relay-0003']);
});

test('every waiter is woken by one record', async () => {
  const w = new World();
  const { waiters } = w;
  const all = [1, 2, 3].map(() => waiters.wait({ after: null, timeoutMs: 60_000 }));
  assert.equal(waiters.count, 3);
  w.land(1);
  for (const result of await Promise.all(all)) assert.deepEqual(result.appeared.map((r) => r.id), ['relay-0001']);
});

test('when the time runs out it answers timedOut with nothing', async () => {
  const w = new World();
  const { waiters } = w;
  const result = await waiters.wait({ after: null, timeoutMs: 30 });
  assert.deepEqual(result.appeared, []);
  assert.equal(result.timedOut, true);
  assert.ok(result.waitedMs >= 25, `waited ${result.waitedMs} ms`);
  assert.equal(waiters.count, 0);
});

test('a timeout of 0 returns at once', async () => {
  const { waiters } = new World([1]);
  const result = await waiters.wait({ after: 3, timeoutMs: 0 });
  assert.equal(result.timedOut, true);
});

test('an abort ends the wait: nothing appeared, not timed out, unsubscribed', async () => {
  const w = new World();
  const { waiters } = w;
  const ac = new AbortController();
  const pending = waiters.wait({ after: null, timeoutMs: 60_000, signal: ac.signal });
  ac.abort();
  const result = await pending;
  assert.deepEqual(result.appeared, []);
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0);
});

test('a signal already aborted returns at once', async () => {
  const { waiters } = new World();
  const result = await waiters.wait({ after: null, timeoutMs: 60_000, signal: AbortSignal.abort() });
  assert.equal(result.timedOut, false);
  assert.equal(waiters.count, 0);
});

test('onProgress is called while it blocks, with the time waited, and stops after', async () => {
  const w = new World();
  const { waiters } = w;
  const calls: number[] = [];
  let progressedTwice!: () => void;
  const twice = new Promise<void>((resolve) => (progressedTwice = resolve));
  const pending = waiters.wait({
    after: null,
    timeoutMs: 60_000,
    progressEveryMs: 10,
    onProgress: (ms) => {
      if (calls.push(ms) === 2) progressedTwice();
    },
  });
  await twice;
  w.land(1);
  await pending;
  const seen = calls.length;
  assert.ok(calls[1]! >= calls[0]!);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(calls.length, seen, 'no progress after the answer');
});


// ---- the subscription every wait and stream is built on -------------------

test('a subscription with a mark catches up in id order, then hands on what lands', async () => {
  const w = new World([1, 3, 2]);
  const got: string[] = [];
  const sub = subscribe(w, { after: 1 }, (m, _n, phase) => void got.push(`${phase} ${m.id}`));
  await sub.caughtUp;
  w.land(4);
  sub.close();
  assert.deepEqual(got, ['catch-up relay-0002', 'catch-up relay-0003', 'live relay-0004']);
});

test('a record both phases see is delivered once; one landing mid-catch-up comes after it', async () => {
  const w = new World([1]);
  let indexed!: () => void;
  Object.defineProperty(w, 'ready', { value: new Promise<void>((r) => (indexed = r)) });
  const got: string[] = [];
  const held: string[] = [];
  let release!: () => void;
  const slowSocket = new Promise<void>((r) => (release = r));
  let heldBack!: () => void;
  const catchUpHeld = new Promise<void>((resolve) => (heldBack = resolve));
  const sub = subscribe(w, { after: 0, onHeld: (m) => held.push(m.id) }, (m, _n, phase) => {
    got.push(`${phase} ${m.id}`);
    if (m.id !== 'relay-0001') return;
    heldBack();
    return slowSocket; // holds the catch-up here
  });
  w.land(2); // listened for, and in the index by the time the catch-up reads it
  indexed();
  await catchUpHeld;
  assert.equal(got.length, 1);
  w.land(3); // lands while the catch-up is held back
  release();
  await sub.caughtUp;
  sub.close();
  assert.deepEqual(held, ['relay-0002', 'relay-0003']);
  assert.deepEqual(got, ['catch-up relay-0001', 'catch-up relay-0002', 'live relay-0003']);
});

test('a subscription without a mark hands on only what lands, held records and fill-ins alike', async () => {
  const w = new World([5]);
  const got: number[] = [];
  const sub = subscribe(w, { after: null }, (_m, n) => void got.push(n));
  w.land(2);
  w.land(6);
  await sub.caughtUp;
  sub.close();
  assert.deepEqual(got, [2, 6]);
});

test('ids in skip are never delivered, and live records wait until skip is known', async () => {
  const w = new World();
  const got: number[] = [];
  let known!: (ids: ReadonlySet<number>) => void;
  const sub = subscribe(w, { after: null, skip: new Promise((r) => (known = r)) }, (_m, n) => void got.push(n));
  w.land(1);
  w.land(2);
  assert.deepEqual(got, [], 'held back until skip settles');
  known(new Set([1, 3]));
  await sub.caughtUp;
  w.land(3); // on disk when the subscription began, noticed only now
  w.land(4);
  sub.close();
  assert.deepEqual(got, [2, 4]);
});

test('match filters the catch-up and live records alike', async () => {
  const w = new World([1, 2, 3, 4]);
  const got: number[] = [];
  const sub = subscribe(w, { after: 0, match: (_m, n) => n % 2 === 0 }, (_m, n) => void got.push(n));
  await sub.caughtUp;
  w.land(5);
  w.land(6);
  sub.close();
  assert.deepEqual(got, [2, 4, 6]);
});

test('close stops delivery and removes its listeners', async () => {
  const w = new World();
  const got: number[] = [];
  const sub = subscribe(w, { after: null }, (_m, n) => void got.push(n));
  w.land(1);
  sub.close();
  sub.close();
  w.land(2);
  assert.deepEqual(got, [1]);
  assert.equal(w.listenerCount('record'), 0);
  assert.equal(w.listenerCount('closed'), 0);
});

test('the store closing ends a subscription with its refusal, and a blocked wait with it', async () => {
  const w = new World();
  const reasons: string[] = [];
  subscribe(w, { after: null, onClosed: (reason) => reasons.push(reason.code) }, () => {});
  const pending = w.waiters.wait({ after: null, timeoutMs: 60_000 });
  const { RelayError } = await import('../../../lib/errors.js');
  w.emit('closed', new RelayError('store_closed', 'closed'));
  await assert.rejects(pending, (err: InstanceType<typeof RelayError>) => err.code === 'store_closed');
  assert.deepEqual(reasons, ['store_closed']);
  assert.equal(w.waiters.count, 0);
  assert.equal(w.listenerCount('record'), 0);
});

test('a live burst past the limit answers its lowest ids, and the cursor is the last of them', async () => {
  const w = new World();
  const pending = w.waiters.wait({ after: null, timeoutMs: 60_000, limit: 3, cursor: () => 'the highest held' });
  // One burst, landing out of id order (other writers): a cut in landing order would leave a lower id below the cursor.
  for (const n of [5, 2, 4, 1, 3]) w.land(n);
  const result = await pending;
  assert.deepEqual(result.appeared.map((a) => a.id), ['relay-0001', 'relay-0002', 'relay-0003']);
  assert.equal(result.cursor, 'relay-0003');
});

test('a filtered wait is not woken by a record its filter rejects, and answers the one it accepts', async () => {
  const w = new World();
  const filter = parseFilter({ to: 'me' }, idShape());
  let seen = 0;
  const waiting = w.waiters.wait({ after: 0, timeoutMs: 5000, filter, cursor: () => `cursor after ${seen}` });
  w.land(1, 'someone-else');
  seen = 1;
  await new Promise((r) => setImmediate(r));
  assert.equal(w.waiters.count, 1, 'still blocked');
  w.land(2, 'you, me');
  seen = 2;
  const result = await waiting;
  assert.deepEqual([result.appeared.map((a) => a.id), result.cursor], [['relay-0002'], 'cursor after 2']);
});

test('a filtered subscription catches up and follows only what the filter accepts', async () => {
  const w = new World();
  w.land(1, 'me');
  w.land(2, 'x');
  const got: string[] = [];
  const sub = subscribe(w, { after: 0, filter: parseFilter({ to: ['me', 'all'] }, idShape()) }, (m) => void got.push(m.id));
  await sub.caughtUp;
  w.land(3, 'all');
  w.land(4, null);
  sub.close();
  assert.deepEqual(got, ['relay-0001', 'relay-0003']);
});
