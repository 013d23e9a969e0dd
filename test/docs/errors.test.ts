/**
 * docs/errors.md is the error registry (lib/errors.ts) written out: every
 * code the registry holds has a row with its HTTP status, and every row
 * names a code the registry holds, with that status.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ERROR_STATUS } from '../../lib/errors.js';
import { ROOT } from '../support/helpers.js';

async function documented(): Promise<Map<string, number>> {
  const text = await readFile(path.join(ROOT, 'docs', 'errors.md'), 'utf8');
  const rows = new Map<string, number>();
  for (const m of text.matchAll(/^\| `([a-z0-9_]+)` \| (\d{3}) \|/gm)) {
    assert.ok(!rows.has(m[1]!), `docs/errors.md lists ${m[1]} twice`);
    rows.set(m[1]!, Number(m[2]));
  }
  return rows;
}

test('docs/errors.md lists exactly the codes of the registry', async () => {
  assert.deepEqual([...(await documented()).keys()].sort(), Object.keys(ERROR_STATUS).sort());
});

test('docs/errors.md gives each code the HTTP status the registry gives it', async () => {
  const rows = await documented();
  for (const [code, status] of Object.entries(ERROR_STATUS)) if (rows.has(code)) assert.equal(rows.get(code), status, code);
});
