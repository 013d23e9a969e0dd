/**
 * The store's lifecycle: prepared → opening → open → closing → closed.
 * Closing tears down everything opening started (counted: timers through
 * async_hooks, inotify watches and file descriptors through /proc), ends
 * blocked waits with the closed refusal, and refuses every call after it.
 */
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { isRelayError } from '../../lib/errors.js';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { RelayStore } from '../../lib/store/store.js';
import { record, tempStore } from '../support/helpers.js';
import { eventually } from '../support/poll.js';

/** Timers (unref'd ones included, which getActiveResourcesInfo leaves out) created since the hook was enabled and not yet ended. */
const liveTimers = new Set<number>();
createHook({
  init(id, type) {
    if (type === 'Timeout') liveTimers.add(id);
  },
  destroy(id) {
    liveTimers.delete(id);
  },
}).enable();

/** Destroy hooks run on a later turn than the clearTimeout that caused them. */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

interface Resources {
  timers: number;
  /** inotify watches held by this process (fs.watch, chokidar), from /proc/self/fdinfo. */
  watches: number;
  /** Open descriptors, leaving out the inotify instance libuv keeps for the life of the process. */
  fds: number;
  active: string[];
}

function resources(): Resources {
  let watches = 0;
  let fds = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // the descriptor readdir itself used
    }
    if (target === 'anon_inode:inotify') watches += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((l) => l.startsWith('inotify wd:')).length;
    else fds++;
  }
  return { timers: liveTimers.size, watches, fds, active: process.getActiveResourcesInfo().sort() };
}

/** Resources now, once pending destroy hooks have run. */
async function settledResources(): Promise<Resources> {
  await turns();
  return resources();
}

/** A corpus of `count` records written straight to disk (no issued log: the open notes the highest). */
async function corpusWith(t: Parameters<typeof tempStore>[0], count: number): Promise<string> {
  const { corpus } = await tempStore(t);
  for (let n = 1; n <= count; n++) {
    const bytes = Buffer.from(record({ kind: 'note' }, `record ${n}`));
    const file = buildRecordFile({ provenance: 'as-received', depositedBy: 'test', depositedAt: '2026-12-01T00:00:00.000Z', digest: digestOf(bytes) }, bytes);
    writeFileSync(path.join(corpus, `relay-${String(n).padStart(4, '0')}`), file); // synchronously: a thread-pool round trip each saved
  }
  return corpus;
}

const closedRefusal = (err: unknown) => isRelayError(err) && err.code === 'store_closed';

/** On the next turns of the event loop: the states looked for here pass quickly. */
const until = (check: () => boolean, what: string) => eventually(check, what, { everyMs: 0 });

test('a store closed while it opens leaves no timer, watcher or descriptor behind', async (t) => {
  const corpus = await corpusWith(t, 2000);
  const before = await settledResources();
  // Watching the directory from the start (no bells), so there is a watch to see started.
  const store = await RelayStore.prepare({ corpus, reconcileMs: 50, bells: false });
  const opening = store.open();
  await until(() => resources().watches > before.watches, 'the watcher started');
  assert.equal(store.state, 'opening', 'the scan is still running');
  await store.close();
  await assert.rejects(opening, closedRefusal);
  assert.equal(store.state, 'closed');
  assert.deepEqual(await settledResources(), before);
});

test('a store opened and closed leaves nothing open, its directory handle and issued log included', async (t) => {
  const corpus = await corpusWith(t, 3);
  const before = await settledResources();
  const store = await RelayStore.prepare({ corpus, reconcileMs: 50 });
  await store.open();
  await store.append(Buffer.from(record()), { depositedBy: 'test' }); // opens the directory handle and the issued log
  assert.equal(store.state, 'open');
  await store.close();
  assert.deepEqual(await settledResources(), before);
});

test('close ends the settle timers of a file still being retried', async (t) => {
  const corpus = await corpusWith(t, 1);
  const store = await RelayStore.prepare({ corpus, bells: false }); // the directory watch sees the file at once
  await store.open();
  const open = await settledResources();
  // A file whose bytes do not match its digest, seen after start: retried for a while before it is called damaged.
  await writeFile(path.join(corpus, 'relay-0002'), buildRecordFile({ provenance: 'as-received', depositedBy: 'x', depositedAt: '2026-12-01T00:00:00.000Z', digest: digestOf(Buffer.from('other')) }, Buffer.from(record())));
  await until(() => liveTimers.size > open.timers, 'a settle timer is pending');
  await store.close();
  assert.equal((await settledResources()).timers, open.timers - 1, 'only the reconcile interval, now ended, is gone besides it');
});

test('a store woken by bells (a filtered wait blocked) leaves no bell watch behind when it closes', async (t) => {
  const corpus = await corpusWith(t, 1);
  const before = await settledResources();
  const store = await RelayStore.prepare({ corpus, reconcileMs: 50 });
  await store.open();
  const waiting = store.wait({ after: 'relay-0001', timeoutMs: 60_000, filter: { to: new Set(['scout-7', 'all']) } });
  await until(() => resources().watches === before.watches + 2, 'a watch on each of the two bells');
  await store.close();
  await assert.rejects(waiting, closedRefusal);
  assert.deepEqual(await settledResources(), before);
});

test('open returns the same promise on repeat; close is safe twice', async (t) => {
  const corpus = await corpusWith(t, 1);
  const store = await RelayStore.prepare({ corpus });
  assert.equal(store.state, 'prepared');
  assert.equal(store.open(), store.open());
  await store.open();
  assert.equal(store.close(), store.close());
  await store.close();
  await store.close();
  assert.equal(store.state, 'closed');
});

test('an append after close is refused store_closed and opens no descriptor', async (t) => {
  const corpus = await corpusWith(t, 1);
  const store = await RelayStore.prepare({ corpus });
  await store.open();
  await store.close();
  const before = await settledResources();
  await assert.rejects(store.append(Buffer.from(record()), { depositedBy: 'test' }), closedRefusal);
  assert.deepEqual(await settledResources(), before);
  assert.deepEqual(readdirSync(corpus).filter((n) => n.startsWith('relay-')), ['relay-0001'], 'nothing was stored');
});

test('every call after close is refused store_closed, open included', async (t) => {
  const corpus = await corpusWith(t, 1);
  const store = await RelayStore.prepare({ corpus });
  await store.open();
  await store.close();
  await assert.rejects(store.exists('relay-0001'), closedRefusal);
  await assert.rejects(store.read('relay-0001'), closedRefusal);
  await assert.rejects(store.list(), closedRefusal);
  await assert.rejects(store.replies('relay-0001'), closedRefusal);
  await assert.rejects(store.wait({ timeoutMs: 60_000 }), closedRefusal);
  await assert.rejects(store.wait({ after: 'relay-0001', timeoutMs: 60_000 }), closedRefusal);
  assert.throws(() => store.subscribe({ after: null }, () => {}), closedRefusal);
  await assert.rejects(store.ready, closedRefusal);
});

test('a store closed before it ever opened refuses open', async (t) => {
  const corpus = await corpusWith(t, 1);
  const store = await RelayStore.prepare({ corpus });
  await store.close();
  await assert.rejects(store.open(), closedRefusal);
  assert.equal(store.state, 'closed');
});

test('a blocked wait ends with the closed refusal when the store closes', async (t) => {
  const corpus = await corpusWith(t, 1);
  const store = await RelayStore.prepare({ corpus });
  await store.open();
  const fromNow = store.wait({ timeoutMs: 60_000 });
  const afterMark = store.wait({ after: 'relay-0001', timeoutMs: 60_000 });
  await until(() => store.waiters.count === 2, 'both waits are blocked');
  const refused = Promise.all([assert.rejects(fromNow, closedRefusal), assert.rejects(afterMark, closedRefusal)]);
  await store.close();
  await refused;
  assert.equal(store.waiters.count, 0);
});

test('a subscription ends with the closed refusal when the store closes', async (t) => {
  const corpus = await corpusWith(t, 1);
  const store = await RelayStore.prepare({ corpus });
  await store.open();
  const ended: string[] = [];
  store.subscribe({ after: 0, onClosed: (reason) => ended.push(reason.code) }, () => {});
  await store.close();
  assert.deepEqual(ended, ['store_closed']);
  assert.equal(store.listenerCount('record'), 0);
});
