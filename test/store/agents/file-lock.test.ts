/**
 * The file lock's judgement of a lock another process holds (agents/file-lock.ts).
 * Races between waiters, and what sshfs answers, are in test/store/shared-fs.process.test.ts.
 */
import assert from 'node:assert/strict';
import { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
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
