import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { silentLogger } from '../../../lib/log.js';
import { CorpusWatcher, QUIET_LISTING_MAX_MS } from '../../../lib/store/hear/watch.js';
import { tempDir } from '../../support/helpers.js';

/**
 * A watcher in events mode whose periodic timer never fires on its own; the
 * test calls reconcile(). Unless a test is about it, the guard for changes
 * within one timestamp tick is off, as if the corpus had been idle a while.
 */
function watcher(dir: string, options: { mustList?: () => boolean; racyMs?: number } = {}) {
  const listings: string[][] = [];
  const w = new CorpusWatcher({ dir, mode: 'events', intervalMs: 1e9, log: silentLogger, onName() {}, onListing: (names) => (listings.push(names), false), racyMs: -Infinity, ...options });
  return { w, listings };
}

test('a reconcile lists the corpus once, then not again while the directory is unchanged', async (t) => {
  const dir = await tempDir(t);
  await fs.writeFile(path.join(dir, 'relay-0001'), 'x');
  const { w, listings } = watcher(dir);
  await w.reconcile();
  await w.reconcile();
  await w.reconcile();
  assert.equal(listings.length, 1);
});

/**
 * Sets the directory's mtime a minute back, as on a corpus nobody has written
 * to for a while, so that the next change moves it even within one timestamp
 * tick of the last look.
 */
const idle = (dir: string) => fs.utimes(dir, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));

test('a name added or removed makes the next reconcile list again', async (t) => {
  const dir = await tempDir(t);
  await idle(dir);
  const { w, listings } = watcher(dir);
  await w.reconcile();
  await fs.writeFile(path.join(dir, 'relay-0002'), 'x');
  await w.reconcile();
  assert.deepEqual(listings.at(-1), ['relay-0002']);
  await idle(dir);
  await w.reconcile();
  await fs.unlink(path.join(dir, 'relay-0002'));
  await w.reconcile();
  assert.deepEqual(listings.at(-1), []);
  assert.equal(listings.length, 4);
});

test('a directory changed moments before a listing is listed again (a later change in the same timestamp tick would not move its mtime)', async (t) => {
  const dir = await tempDir(t);
  await fs.writeFile(path.join(dir, 'relay-0001'), 'x'); // mtime and ctime: now
  const { w, listings } = watcher(dir, { racyMs: 1000 });
  await w.reconcile();
  await w.reconcile();
  assert.equal(listings.length, 2);
});

test('a consumer with files to look at again (damaged records) gets a listing even when nothing changed', async (t) => {
  const dir = await tempDir(t);
  const { w, listings } = watcher(dir, { mustList: () => true });
  await w.reconcile();
  await w.reconcile();
  assert.equal(listings.length, 2);
});

test('on a shared filesystem every reconcile lists: the directory times of another host\'s write cannot be trusted', async (t) => {
  const dir = await tempDir(t);
  await fs.writeFile(path.join(dir, 'relay-0001'), 'x');
  await idle(dir);
  const listings: string[][] = [];
  const w = new CorpusWatcher({ dir, mode: 'events', intervalMs: 2 ** 30, log: silentLogger, onName() {}, onListing: (names) => (listings.push(names), false), racyMs: -Infinity });
  w.start(true);
  t.after(() => w.close());
  await w.reconcile();
  await w.reconcile();
  await w.reconcile();
  assert.equal(listings.length, 3);
});

/**
 * A watcher whose timer the test is: `tick()` as the interval would, on a
 * clock the test moves. `announced` is the issued log's line count (what the
 * store's own writers announced), `news` what each listing answers.
 */
async function ticking(t: TestContext) {
  const dir = await tempDir(t);
  await idle(dir);
  const state = { clock: 0, announced: 0, news: false, mustList: false, listings: 0 };
  const w = new CorpusWatcher({
    dir, mode: 'events', intervalMs: 2000, log: silentLogger, racyMs: -Infinity, onName() {},
    onListing: () => (state.listings++, state.news),
    announced: () => state.announced,
    mustList: () => state.mustList,
    now: () => state.clock,
  });
  let files = 0;
  /** A record linked by one of the store's writers (announced) or by someone else, then `ms` later a tick; resolves with whether it listed. */
  const after = async (ms: number, by: 'a writer' | 'someone else' = 'a writer') => {
    await fs.writeFile(path.join(dir, `relay-${String(++files).padStart(4, '0')}`), 'x');
    // Long past, and a different time at every change: two changes within one timestamp tick must not look like none.
    const when = new Date(Date.now() - 3_600_000 + files * 1000);
    await fs.utimes(dir, when, when);
    if (by === 'a writer') state.announced++;
    state.clock += ms;
    const before = state.listings;
    await w.tick();
    return state.listings > before;
  };
  return { state, after };
}

test('while only the store\'s writers change the directory, each listing that finds nothing puts the next off twice as long, up to a cap', async (t) => {
  const { after } = await ticking(t);
  assert.equal(await after(2000), true, 'the first listing');
  assert.equal(await after(2000), false, 'the second waits 4 s');
  assert.equal(await after(2000), true);
  assert.equal(await after(4000), false, 'the third waits 8 s');
  assert.equal(await after(4000), true);
  let listed = 0;
  for (let s = 0; s < 10 * QUIET_LISTING_MAX_MS; s += 2000) if (await after(2000)) listed++;
  assert.ok(listed >= 9 && listed <= 11, `about one listing per ${QUIET_LISTING_MAX_MS} ms once capped, got ${listed} in ${10 * QUIET_LISTING_MAX_MS} ms`);
});

test('a directory changed by someone who announced nothing is listed at the next tick, whatever the back-off', async (t) => {
  const { after } = await ticking(t);
  for (const ms of [2000, 4000, 8000]) assert.equal(await after(ms), true);
  assert.equal(await after(2000), false);
  assert.equal(await after(2000, 'someone else'), true);
});

test('a listing that finds something brings the interval back to the tick\'s', async (t) => {
  const { state, after } = await ticking(t);
  for (const ms of [2000, 4000, 8000]) assert.equal(await after(ms), true);
  state.news = true;
  assert.equal(await after(16_000), true);
  state.news = false;
  assert.equal(await after(2000), true, 'listed again at the next tick');
});

test('damaged records to look at again get their listing at every tick, whatever the back-off', async (t) => {
  const { state, after } = await ticking(t);
  for (const ms of [2000, 4000, 8000]) assert.equal(await after(ms), true);
  state.mustList = true;
  assert.equal(await after(2000), true);
  assert.equal(await after(2000), true);
});
