/** The one readdir → record ids: what in a corpus directory is a record of this store, or of any width. */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { idShape } from '../../lib/model/ids.js';
import { isRecordNameOfAnyWidth, listRecordIds, listRecordNames, recordIdsIn } from '../../lib/disk/record-names.js';
import { tempDir } from '../support/helpers.js';

const NAMES = ['relay-0002', 'relay-0001', 'relay-00003', 'relay-0000', '.relay-0004.Xa81', 'relay-0005~', 'README', '.state'];

test('only names of this store\'s shape are its records; relay-0000 and other widths are not', () => {
  assert.deepEqual(recordIdsIn(NAMES, idShape(4)), [2, 1]);
  assert.deepEqual(recordIdsIn(NAMES, idShape(5)), [3]);
});

test('a record name of any width is relay- and digits, nothing around them', () => {
  assert.deepEqual(NAMES.filter(isRecordNameOfAnyWidth), ['relay-0002', 'relay-0001', 'relay-00003', 'relay-0000']);
});

test('listing a directory finds the records among its entries', async (t) => {
  const dir = await tempDir(t);
  for (const name of NAMES.filter((n) => n !== '.state')) await writeFile(path.join(dir, name), '');
  await mkdir(path.join(dir, '.state'));
  assert.deepEqual((await listRecordIds(dir, idShape(4))).sort(), [1, 2]);
  assert.deepEqual((await listRecordNames(dir)).sort(), ['relay-0000', 'relay-00003', 'relay-0001', 'relay-0002']);
});
