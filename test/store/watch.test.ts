import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { silentLogger } from '../../lib/log.js';
import { CorpusWatcher } from '../../lib/store/hear/watch.js';
import { tempDir } from '../support/helpers.js';

/**
 * A watcher in events mode whose periodic timer never fires on its own; the
 * test calls reconcile(). Unless a test is about it, the guard for changes
 * within one timestamp tick is off, as if the corpus had been idle a while.
 */
function watcher(dir: string, options: { mustList?: () => boolean; racyMs?: number } = {}) {
  const listings: string[][] = [];
  const w = new CorpusWatcher({ dir, mode: 'events', intervalMs: 1e9, log: silentLogger, onName() {}, onListing: (names) => void listings.push(names), racyMs: -Infinity, ...options });
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
  const w = new CorpusWatcher({ dir, mode: 'events', intervalMs: 2 ** 30, log: silentLogger, onName() {}, onListing: (names) => void listings.push(names), racyMs: -Infinity });
  w.start(true);
  t.after(() => w.close());
  await w.reconcile();
  await w.reconcile();
  await w.reconcile();
  assert.equal(listings.length, 3);
});
