/** lib/version.ts (what servers and the CLI report) says the version package.json does. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { VERSION } from '../../lib/version.js';
import { ROOT } from '../support/helpers.js';

test('lib/version.ts is the version in package.json', async () => {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  assert.equal(VERSION, pkg.version);
});
