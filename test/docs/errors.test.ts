/**
 * docs/errors.md is the error registry (lib/errors.ts) written out: every
 * code the registry holds has a row with its HTTP status and whether it is
 * retryable, and every row names a code the registry holds, with that status.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ERROR_STATUS, RETRYABLE, type ErrorCode } from '../../lib/errors.js';
import { ROOT } from '../support/helpers.js';

interface Row {
  status: number;
  retry: string;
}

async function documentedRows(): Promise<Map<string, Row>> {
  const text = await readFile(path.join(ROOT, 'docs', 'errors.md'), 'utf8');
  const rows = new Map<string, Row>();
  for (const m of text.matchAll(/^\| `([a-z0-9_]+)` \| (\d{3}) \| ([a-z]+) \|/gm)) {
    assert.ok(!rows.has(m[1]!), `docs/errors.md lists ${m[1]} twice`);
    rows.set(m[1]!, { status: Number(m[2]), retry: m[3]! });
  }
  return rows;
}

async function documented(): Promise<Map<string, number>> {
  return new Map([...(await documentedRows())].map(([code, row]) => [code, row.status]));
}

test('docs/errors.md lists exactly the codes of the registry', async () => {
  assert.deepEqual([...(await documented()).keys()].sort(), Object.keys(ERROR_STATUS).sort());
});

test('docs/errors.md gives each code the HTTP status the registry gives it', async () => {
  const rows = await documented();
  for (const [code, status] of Object.entries(ERROR_STATUS)) if (rows.has(code)) assert.equal(rows.get(code), status, code);
});

test('docs/errors.md says of each code whether it is retryable, as the registry does', async () => {
  const rows = await documentedRows();
  for (const [code, row] of rows) assert.equal(row.retry, RETRYABLE.has(code as ErrorCode) ? 'yes' : 'no', code);
  for (const code of RETRYABLE) assert.ok(rows.has(code), `${code} is retryable and has a row`);
});
