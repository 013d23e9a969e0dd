/**
 * A half-written file retried until whole (lib/store/index/settling.ts):
 * the retries end at the first look that finds nothing more to do, give the
 * last error when the file never becomes whole, end at once on close, and
 * hold a cursor below the lowest file still being retried.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Settling, type Look } from '../../../lib/store/index/settling.js';

const failing = (error: string): Look => ({ error: new Error(error) });

/** The delays are unref'd (a half-written file never holds a process open): the test holds its own loop open. */
function holdOpen(t: TestContext): void {
  const timer = setInterval(() => {}, 1000);
  t.after(() => clearInterval(timer));
}

test('retries end at the first look with nothing more to do', async (t) => {
  holdOpen(t);
  const settling = new Settling();
  let looks = 0;
  const last = await settling.retry(() => (++looks < 3 ? failing(`look ${looks}`) : null), [0, 1, 1, 1, 1]);
  assert.equal(last, null);
  assert.equal(looks, 3);
});

test('a file that never becomes whole answers the error of its last look', async (t) => {
  holdOpen(t);
  const settling = new Settling();
  let looks = 0;
  const last = await settling.retry(() => failing(`look ${++looks}`), [0, 1, 1]);
  assert.equal((last as Error).message, 'look 3');
});

test('close ends a pending delay at once, and the retry gives up without an error', async () => {
  const settling = new Settling();
  const started = Date.now();
  const retry = settling.retry(() => failing('half-written'), [0, 60_000]);
  settling.close();
  assert.equal(await retry, null);
  assert.ok(Date.now() - started < 10_000);
});

test('a file being retried holds the cursor below it until it settles, and its end is told', async () => {
  let told = 0;
  const settling = new Settling(() => told++);
  let release!: () => void;
  const run = settling.start(7, () => new Promise<void>((resolve) => (release = resolve)));
  settling.start(9, () => Promise.resolve());
  assert.equal(settling.lowest(() => false), 7);
  assert.equal(settling.lowest((n) => n === 7), 9, 'an id already held does not hold the cursor');
  assert.equal(settling.get(7), run, 'a second look joins the first');
  release();
  await settling.settled();
  assert.equal(settling.lowest(() => false), null);
  assert.equal(told, 2);
});
