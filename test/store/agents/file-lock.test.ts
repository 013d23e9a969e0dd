/**
 * The file lock every work claim's decision, mark and about takes: one
 * holder at a time, also when its last holder died holding it and many wait
 * to take it over, and its judgement of a lock another process holds.
 * Races between hosts, and what sshfs answers, are in
 * test/store/shared-fs.process.test.ts.
 */
import assert from 'node:assert/strict';
import fs, { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { hostIdentity } from '../../../lib/disk/host.js';
import { lockOf, withFileLock } from '../../../lib/store/agents/file-lock.js';
import { tempDir } from '../../support/helpers.js';

test('a live lock whose mtime is a minute old (a file server\'s clock, or the last lock\'s mtime still shown) is not taken over', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'work-claims');
  const theirs = 'host-there b0070000 777 0123456789abcdef\n';
  await writeFile(lockOf(file), theirs);
  const minuteAgo = new Date(Date.now() - 60_000);
  await utimes(lockOf(file), minuteAgo, minuteAgo);
  const end = Date.now() + 1_500;
  let entered = false;
  await assert.rejects(
    withFileLock(file, async () => void (entered = true), (why) => new Error(why), { giveUp: () => Date.now() > end }),
    /gave up waiting for \.work-claims\.lock/,
  );
  assert.equal(entered, false);
  assert.equal(await readFile(lockOf(file), 'utf8'), theirs, 'their lock is still there');
});

test('a lock whose holder died is taken over by one waiter at a time, however their removals interleave', async (t) => {
  const me = hostIdentity();
  const file = path.join(await tempDir(t, 'pe-relay-lock-'), 'work-claims');
  const lock = lockOf(file);
  await writeFile(lock, `${me.host} ${me.boot} 999999999 0123456789abcdef\n`); // a pid of this boot that runs no more
  // Each removal of the lock lands 30 ms after the one before: two waiters that judged the dead lock at once remove one each.
  const unlink = fs.unlink.bind(fs);
  let removals = 0;
  t.mock.method(fs, 'unlink', async (target: string) => {
    if (target === lock) await new Promise((resolve) => setTimeout(resolve, 30 * ++removals));
    return unlink(target);
  });
  let inside = 0;
  let most = 0;
  await Promise.all(Array.from({ length: 2 }, () => withFileLock(file, async () => {
    most = Math.max(most, ++inside);
    await new Promise((resolve) => setTimeout(resolve, 150));
    inside--;
  }, (why) => new Error(why))));
  assert.equal(most, 1, 'two held the lock at once');
});

test('a taker that died while taking a lock over does not stop the next one', async (t) => {
  const me = hostIdentity();
  const file = path.join(await tempDir(t, 'pe-relay-lock-'), 'work-claims');
  await writeFile(lockOf(file), `${me.host} ${me.boot} 999999999 0123456789abcdef\n`);
  await writeFile(`${lockOf(file)}.break`, `${me.host} ${me.boot} 999999999 0123456789abcdef\n`);
  assert.equal(await withFileLock(file, async () => 'held', (why) => new Error(why)), 'held');
});
