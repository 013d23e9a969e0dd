/**
 * The file lock every work claim's decision, mark and about takes: one
 * holder at a time, also when its last holder died holding it and many
 * wait to take it over.
 */
import assert from 'node:assert/strict';
import fs, { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { hostIdentity } from '../../../lib/disk/host.js';
import { lockOf, withFileLock } from '../../../lib/store/agents/file-lock.js';
import { tempDir } from '../../support/helpers.js';

test('a lock whose holder died is taken over by one waiter at a time, however their removals interleave', async (t) => {
  const me = hostIdentity();
  const file = path.join(await tempDir(t, 'pe-relay-lock-'), 'work-claims');
  const lock = lockOf(file);
  await writeFile(lock, `${me.host} ${me.boot} 999999999\n`); // a pid of this boot that runs no more
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
  await writeFile(lockOf(file), `${me.host} ${me.boot} 999999999\n`);
  await writeFile(`${lockOf(file)}.break`, `${me.host} ${me.boot} 999999999\n`);
  assert.equal(await withFileLock(file, async () => 'held', (why) => new Error(why)), 'held');
});
