/** The checkout's ./corpus and ./keys are the user's: the test kit runs the CLI elsewhere, and the run's guard sees any change. */
import assert from 'node:assert/strict';
import { mkdir, readlink, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import test from 'node:test';
import { ROOT, runCli, tempDir, tempStore } from './helpers.js';
import { spawnHub } from './hub-process.js';
// @ts-expect-error: a plain .mjs module beside the test runner, without types
import { differences, picture } from './checkout-guard.mjs';

test('runCli without a cwd runs the CLI outside the checkout: ./corpus is not the checkout\'s', async () => {
  const result = await runCli(['ls']);
  assert.equal(result.code, 1);
  const named = /There is no corpus directory at (\S+)\. /.exec(result.stderr)?.[1];
  assert.ok(named !== undefined, result.stderr);
  assert.ok(!path.resolve(named).startsWith(ROOT + path.sep), `${named} is in the checkout`);
});

test('spawnHub without a cwd runs the hub outside the checkout', async (t) => {
  const { corpus, keys } = await tempStore(t);
  const hub = await spawnHub({ corpus, keys, cleanup: t });
  const cwd = await readlink(`/proc/${hub.pid}/cwd`);
  assert.ok(!cwd.startsWith(ROOT + path.sep) && cwd !== ROOT, `the hub runs in ${cwd}`);
});

test('the guard\'s picture names an added roster file, a rewritten key and a removed file, and nothing when nothing changed', async (t) => {
  const root = await tempDir(t);
  await mkdir(path.join(root, 'corpus', '.state', 'roster'), { recursive: true });
  await mkdir(path.join(root, 'keys'));
  await writeFile(path.join(root, 'keys', 'scout-7.key'), 'a'.repeat(64));
  await writeFile(path.join(root, 'corpus', 'README.md'), 'shipped');
  const before = await picture(root, ['corpus', 'keys', 'absent']);
  assert.deepEqual(differences(before, await picture(root, ['corpus', 'keys', 'absent'])), []);

  await writeFile(path.join(root, 'corpus', '.state', 'roster', 'a.agent'), '{}');
  await utimes(path.join(root, 'keys', 'scout-7.key'), new Date(0), new Date(0));
  await rm(path.join(root, 'corpus', 'README.md'));
  const lines = differences(before, await picture(root, ['corpus', 'keys', 'absent'])) as string[];
  assert.equal(lines.length, 3, lines.join('\n'));
  assert.match(lines.join('\n'), /added corpus\/\.state\/roster\/a\.agent/);
  assert.match(lines.join('\n'), /changed keys\/scout-7\.key/);
  assert.match(lines.join('\n'), /removed corpus\/README\.md/);
});
