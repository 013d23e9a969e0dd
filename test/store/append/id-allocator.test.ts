/**
 * lib/store/append/id-allocator.ts on real files: which id a new record is
 * linked under, and what an id another writer took first costs.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { corpusPaths } from '../../../lib/disk/paths.js';
import { idShape } from '../../../lib/model/ids.js';
import { RecordIndex } from '../../../lib/model/record-index.js';
import { IdAllocator } from '../../../lib/store/append/id-allocator.js';
import type { CorpusIndexer } from '../../../lib/store/index/corpus-indexer.js';
import { tempStore } from '../../support/helpers.js';

const shape = idShape();

/** An allocator whose log (what `hearUpTo` reads) names `noted` ids; the ids it had to index after losing them are kept. */
async function allocator(corpus: string, taken: number, noted: number) {
  const paths = corpusPaths(corpus);
  for (let n = 1; n <= taken; n++) await fs.writeFile(paths.record(shape.format(n)), `another writer's ${n}\n`);
  const index = new RecordIndex(shape.format);
  const ingested: number[] = [];
  // Only the ids this allocator lost are indexed by it; the rest of the indexer is not its business.
  const indexer = { ingest: async (n: number) => void ingested.push(n) } as unknown as CorpusIndexer;
  const hearUpTo = () => index.noteIssued(noted); // what hear/peers.ts does with the issued log's lines
  const ids = new IdAllocator(index, indexer, shape, paths, async () => {}, () => false, hearUpTo);
  const temp = path.join(paths.tmp, 'ours');
  await fs.writeFile(temp, 'ours\n');
  return { ids, temp, ingested, paths };
}

test('ids the issued log names are heard before the first link: taken while the record was being written, they cost no failed link()', async (t) => {
  const { corpus } = await tempStore(t);
  const { ids, temp, ingested } = await allocator(corpus, 3, 3);
  assert.equal(await ids.linkNextFree(temp), 4);
  assert.equal(ids.lost, 0);
  assert.deepEqual(ingested, []);
});

test('an id linked by a writer whose line is not in the log yet is lost once, indexed, and the next try is past it', async (t) => {
  const { corpus } = await tempStore(t);
  const { ids, temp, ingested, paths } = await allocator(corpus, 1, 0);
  assert.equal(await ids.linkNextFree(temp), 2);
  assert.equal(ids.lost, 1);
  assert.deepEqual(ingested, [1]);
  assert.equal(await fs.readFile(paths.record('relay-0002'), 'utf8'), 'ours\n');
});
