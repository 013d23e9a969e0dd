/**
 * lib/store/append/id-allocator.ts on real files: which id a new record is
 * linked under, and what an id another writer took first costs.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { corpusPaths } from '../../../lib/disk/paths.js';
import { DirectorySync } from '../../../lib/disk/publish.js';
import { idShape } from '../../../lib/model/ids.js';
import type { IssuedHint } from '../../../lib/model/issued-line.js';
import { RecordIndex, type RecordMeta } from '../../../lib/model/record-index.js';
import { IdAllocator } from '../../../lib/store/append/id-allocator.js';
import { Visibility } from '../../../lib/store/follow/visibility.js';
import { bellsOf } from '../../../lib/store/hear/bell-keys.js';
import type { CorpusIndexer } from '../../../lib/store/index/corpus-indexer.js';
import { tempStore } from '../../support/helpers.js';

const shape = idShape();

/** An allocator whose log (what `peers.hear` reads) names `noted` ids; the ids it had to index after losing them are kept. */
async function allocator(corpus: string, taken: number, noted: number) {
  const paths = corpusPaths(corpus);
  for (let n = 1; n <= taken; n++) await fs.writeFile(paths.record(shape.format(n)), `another writer's ${n}\n`);
  const index = new RecordIndex(shape.format);
  const ingested: number[] = [];
  // Only the ids this allocator lost are indexed by it; the rest of the indexer is not its business.
  const indexer = { ingest: async (n: number) => void ingested.push(n) } as unknown as CorpusIndexer;
  const peers = { hear: () => index.noteIssued(noted) }; // what hear/peers.ts does with the issued log's lines
  const into = { tmpDir: paths.tmp, dirSync: new DirectorySync(corpus) };
  const visibility = new Visibility({ index, indexer: { lowestSettling: () => null }, shape, events: new EventEmitter(), snapshots: { noteChange: () => {} } });
  const ids = new IdAllocator({ index, indexer, shape, paths, into, issued: { note: () => {} }, bells: null, peers, visibility, facts: { shared: false }, relist: async () => {} });
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

/** An allocator that publishes, with a directory sync that says what was done before it ran, and may fail. */
async function publisher(corpus: string, syncFails = false) {
  const paths = corpusPaths(corpus);
  const index = new RecordIndex(shape.format);
  const ingested: number[] = [];
  const indexer = { ingest: async (n: number) => void ingested.push(n) } as unknown as CorpusIndexer;
  const told: string[] = [];
  const dirSync = {
    sync: async () => {
      told.push('directory fsynced');
      if (syncFails) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    },
  } as unknown as DirectorySync;
  const announced: number[] = [];
  const events = new EventEmitter().on('record', (_meta: unknown, n: number) => void announced.push(n));
  const visibility = new Visibility({ index, indexer: { lowestSettling: () => null }, shape, events, snapshots: { noteChange: () => {} } });
  const ids = new IdAllocator({
    index, indexer, shape, paths, visibility, facts: { shared: false }, relist: async () => {},
    into: { tmpDir: paths.tmp, dirSync },
    issued: { note: (n) => void told.push(`noted ${shape.format(n)}`) },
    bells: { ring: (keys) => void told.push(`rang ${keys.join(',')}`) },
    peers: { hear: () => {} },
  });
  const hint = { claims: { kind: null, from: null, to: 'bob', parent: null, named: [] }, depositedBy: 'mcp' } as unknown as IssuedHint;
  return { ids, paths, ingested, told, visibility, announced, hint };
}

test('a published id is noted in the issued log and its bells rung before the directory is fsynced', async (t) => {
  const { corpus } = await tempStore(t);
  const { ids, told, hint, paths } = await publisher(corpus);
  assert.equal(await ids.publish(Buffer.from('ours\n'), null, hint), 1);
  assert.deepEqual(told, ['noted relay-0001', `rang ${bellsOf(hint.claims).join(',')}`, 'directory fsynced']);
  assert.equal(await fs.readFile(paths.record('relay-0001'), 'utf8'), 'ours\n');
  assert.deepEqual(await fs.readdir(paths.tmp), [], 'the temp name is removed');
});

test('a directory fsync that fails after the link is refused, the record indexed from disk and no cursor held below it', async (t) => {
  const { corpus } = await tempStore(t);
  const { ids, ingested, visibility, announced, hint, paths } = await publisher(corpus, true);
  await assert.rejects(ids.publish(Buffer.from('ours\n'), null, hint), /EIO/);
  assert.equal(await fs.readFile(paths.record('relay-0001'), 'utf8'), 'ours\n', 'linked, so on disk all the same');
  assert.deepEqual(ingested, [1]);
  visibility.announce(2, {} as RecordMeta);
  assert.deepEqual(announced, [2], 'relay-0001 no longer holds back what lands above it');
  assert.deepEqual(await fs.readdir(paths.tmp), [], 'the temp name is removed');
});
