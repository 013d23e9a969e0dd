/**
 * The text index's memory, measured in a child process with `global.gc`:
 * records of distinct short words (the shape that took a hub 19 times their
 * bytes) must cost the index a few bytes of heap per record byte, and a
 * budget must hold whatever the records say.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { tempStore } from '../../support/helpers.js';

const run = promisify(execFile);
const CHILD = path.join(import.meta.dirname, '..', '..', 'support', 'text-memory-child.ts');

/** Heap the index may hold per byte of hostile record text (docs/security.md states it). */
const HEAP_PER_RECORD_BYTE = 4;

async function measure(corpus: string, records: number, words: number, budget?: number) {
  const args = ['--expose-gc', '--import', 'tsx', CHILD, corpus, String(records), String(words), ...(budget ? [String(budget)] : [])];
  const { stdout } = await run(process.execPath, args, { maxBuffer: 1 << 20 });
  return JSON.parse(stdout) as { bytes: number; grew: number; found: number[]; refused: string | null };
}

test('records of many distinct short words cost the text index at most a few bytes of heap per record byte', async (t) => {
  const { corpus } = await tempStore(t);
  const got = await measure(corpus, 60, 13_000); // 60 records of 64 KB, every word new
  assert.equal(got.refused, null);
  assert.deepEqual(got.found, [1], 'the first record is found by its first word');
  const perByte = got.grew / got.bytes;
  assert.ok(perByte < HEAP_PER_RECORD_BYTE, `the index held ${(got.grew / 2 ** 20).toFixed(1)} MB for ${(got.bytes / 2 ** 20).toFixed(1)} MB of records: ${perByte.toFixed(2)} bytes a byte`);
});

test('past its budget the text index holds no more, and a search says so with text_index_full', async (t) => {
  const { corpus } = await tempStore(t);
  const budget = 2 * 2 ** 20;
  const got = await measure(corpus, 40, 3_000, budget); // 120k new words under the per-record cap: ~11 MB as the estimate counts
  assert.equal(got.refused, 'text_index_full');
  assert.ok(got.grew < 2 * budget, `the index held ${(got.grew / 2 ** 20).toFixed(1)} MB against a budget of ${budget / 2 ** 20} MB`);
});
