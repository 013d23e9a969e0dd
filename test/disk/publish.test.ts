/** lib/disk/publish.ts: a name is taken by link() once, and a blocking link takes it in the caller's own turn. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { linkExclusive } from '../../lib/disk/publish.js';
import { tempDir } from '../support/helpers.js';

async function tempFile(dir: string, name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await fs.writeFile(file, text);
  return file;
}

test('a blocking link has taken the name before linkExclusive hands back its promise', async (t) => {
  const dir = await tempDir(t);
  const temp = await tempFile(dir, 'temp', 'ours');
  const target = path.join(dir, 'relay-0001');
  const linking = linkExclusive(temp, target, { blocking: true });
  assert.equal(existsSync(target), true, 'what the caller does next (note the id for other processes) follows the link');
  assert.equal(await linking, true);
  assert.equal(await fs.readFile(target, 'utf8'), 'ours');
});

test('a name another writer holds answers false, blocking or not, and its bytes stay', async (t) => {
  const dir = await tempDir(t);
  const target = await tempFile(dir, 'relay-0001', 'theirs');
  const temp = await tempFile(dir, 'temp', 'ours');
  for (const blocking of [true, false]) assert.equal(await linkExclusive(temp, target, { blocking }), false, `blocking: ${blocking}`);
  assert.equal(await fs.readFile(target, 'utf8'), 'theirs');
});

test('a blocking link that fails for another reason than a taken name throws what link() said', async (t) => {
  const dir = await tempDir(t);
  const temp = await tempFile(dir, 'temp', 'ours');
  await assert.rejects(linkExclusive(temp, path.join(dir, 'no-such-dir', 'relay-0001'), { blocking: true }), { code: 'ENOENT' });
});
