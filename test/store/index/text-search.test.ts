/**
 * The text filter in a real store: the index of words is built from the
 * record files on the first text query, kept current with what lands after,
 * and combined with the other filters by every query that takes a filter.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import { test, type TestContext } from 'node:test';
import { corpusPaths } from '../../../lib/disk/paths.js';
import { buildRecordFile, digestOf } from '../../../lib/model/deposit.js';
import { parseFilter } from '../../../lib/model/filter.js';
import { idShape } from '../../../lib/model/ids.js';
import { filterKey } from '../../../lib/store/agents/filter-key.js';
import type { SearchableIndex } from '../../../lib/store/index/text-index.js';
import { openStore, type RelayStore } from '../../../lib/store/store.js';
import { record, tempStore } from '../../support/helpers.js';
import { countingReader } from '../../support/counting-reader.js';

const BY = { depositedBy: 'cli/test' };

async function fresh(t: TestContext, options: Parameters<typeof openStore>[0] extends infer O ? Partial<O> : never = {}) {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none', ...options });
  t.after(() => store.close());
  return { store, corpus };
}

const add = async (store: RelayStore, headers: Record<string, string>, body: string) =>
  (await store.append(Buffer.from(record(headers, body)), BY)).id;
const text = (store: RelayStore, search: string, more: Parameters<typeof parseFilter>[0] = {}) => parseFilter({ ...more, text: search }, store.shape);

test('list finds the records holding every word, with the other filters, and what lands after the first search', async (t) => {
  const { store } = await fresh(t);
  await add(store, { kind: 'status', to: 'ops' }, 'Disk FULL on host-3');
  await add(store, { kind: 'note', to: 'ops' }, 'the disk is fine');
  await add(store, { kind: 'status', to: 'dev' }, 'disk full again');
  assert.deepEqual((await store.listIds(undefined, text(store, 'full disk'))).present.map(store.shape.format), ['relay-0001', 'relay-0003']);
  assert.deepEqual((await store.listIds(undefined, text(store, 'full disk', { to: 'ops' }))).present.map(store.shape.format), ['relay-0001']);
  assert.deepEqual((await store.listIds('relay-0001', text(store, 'disk full'))).present.map(store.shape.format), ['relay-0003']);
  await add(store, { kind: 'status', from: 'Disk' }, 'full');
  assert.deepEqual((await store.listIds(undefined, text(store, 'disk full'))).present.map(store.shape.format), ['relay-0001', 'relay-0003', 'relay-0004'],
    'a record appended after the first search is found, by a header value too');
  assert.deepEqual((await store.listIds(undefined, text(store, 'kind'))).present.map(store.shape.format), [], 'header keys are not words of the record');
});

test('the first text query reads the records, and a store that never searches reads none for it', async (t) => {
  const { reader, reads } = countingReader();
  const { store } = await fresh(t, { reader });
  for (let i = 0; i < 5; i++) await add(store, {}, `note ${i}`);
  await store.listIds(undefined, parseFilter({ kind: 'note' }, store.shape));
  assert.equal(reads.size, 0, 'appends and other filters read no record for the words');
  assert.deepEqual((await store.listIds(undefined, text(store, '3'))).present.map(store.shape.format), ['relay-0004']);
  assert.deepEqual([...reads.values()], [1, 1, 1, 1, 1], 'each held record is read once, on the first text query');
  await store.listIds(undefined, text(store, 'note'));
  assert.deepEqual([...reads.values()], [1, 1, 1, 1, 1], 'and not again');
});

test('the first search through list or wait reads the records a slice at a time: the process answers others meanwhile', async (t) => {
  const { reader, reads } = countingReader();
  const { store } = await fresh(t, { reader });
  for (let i = 0; i < 600; i++) await add(store, {}, `note ${i}`);
  let ticks = 0;
  let readAtFirstTick = -1;
  const ticking = setInterval(() => (ticks++ === 0 ? (readAtFirstTick = reads.size) : undefined), 0);
  t.after(() => clearInterval(ticking));
  assert.deepEqual((await store.listIds(undefined, text(store, '7'))).present.map(store.shape.format), ['relay-0008']);
  assert.equal(reads.size, 600);
  assert.ok(readAtFirstTick > 0 && readAtFirstTick < 600, `a timer ran while the records were read (first after ${readAtFirstTick})`);
  await add(store, {}, 'note 7 again');
  const waited = await store.wait({ after: 'relay-0000', timeoutMs: 0, filter: text(store, '7') });
  assert.deepEqual(waited.appeared.map((item) => item.id), ['relay-0008', 'relay-0601']);
});

test('tail -n with text counts only matching records, and a wait wakes for a matching record only', async (t) => {
  const { store } = await fresh(t);
  for (const body of ['alpha', 'beta', 'alpha beta', 'gamma', 'ALPHA']) await add(store, {}, body);
  assert.equal(store.markBeforeNewest(2, text(store, 'alpha')), 2, 'the newest two holding alpha are 3 and 5');
  assert.equal(store.markBeforeNewest(9, text(store, 'alpha')), 0);
  const waiting = store.wait({ after: 'relay-0005', timeoutMs: 10_000, filter: text(store, 'delta') });
  await add(store, {}, 'epsilon');
  await add(store, {}, 'Delta rising');
  const result = await waiting;
  assert.deepEqual(result.appeared.map((item) => item.id), ['relay-0007']);
});

test('a damaged record holds no words; once whole again it is found', async (t) => {
  const { store, corpus } = await fresh(t);
  await add(store, {}, 'needle');
  const file = corpusPaths(corpus).record('relay-0001');
  const whole = await readFile(file);
  await writeFile(file, Buffer.concat([whole, Buffer.from('x')]));
  assert.deepEqual((await store.listIds(undefined, text(store, 'needle'))).present.map(store.shape.format), []);
  await writeFile(file, whole);
  assert.deepEqual((await store.listIds(undefined, text(store, 'needle'))).present.map(store.shape.format), ['relay-0001']);
});

test('a file whose digest holds but whose bytes are no record (damaged to the index) holds no words', async (t) => {
  const { corpus } = await tempStore(t);
  const bytes = Buffer.from('not a record line\n\nneedle');
  const deposit = { provenance: 'as-received' as const, depositedBy: 'cli/test', depositedAt: '2026-11-30T00:00:00.000Z', digest: digestOf(bytes) };
  await writeFile(corpusPaths(corpus).record('relay-0001'), buildRecordFile(deposit, bytes));
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  await add(store, {}, 'needle');
  assert.deepEqual((await store.listIds(undefined, text(store, 'needle'))).present.map(store.shape.format), ['relay-0002']);
});

test('a text wait keeps its own mark: the filter set\'s key names its words, in any order and case', () => {
  const shape = idShape(4);
  const key = (input: Parameters<typeof parseFilter>[0]) => filterKey(parseFilter(input, shape), shape);
  assert.notEqual(key({ to: 'scout-7', text: 'disk' }), key({ to: 'scout-7' }));
  assert.notEqual(key({ text: 'disk' }), key({ text: 'full' }));
  assert.equal(key({ text: 'Disk full' }), key({ text: 'FULL, disk' }));
});

/** The store's text index, reached into for what no door can do to it. */
const textIndexOf = (store: RelayStore) => (store as unknown as { w: { index: SearchableIndex } }).w.index;

test('a damaged record is not read by every text query, only again once its file changes', async (t) => {
  const { reader, reads } = countingReader();
  const { store, corpus } = await fresh(t, { reader });
  await add(store, {}, 'needle');
  await add(store, {}, 'hay');
  const file = corpusPaths(corpus).record('relay-0001');
  const whole = await readFile(file);
  await writeFile(file, Buffer.concat([whole, Buffer.from('x')]));
  for (let i = 0; i < 3; i++) assert.deepEqual((await store.listIds(undefined, text(store, 'needle'))).present, []);
  assert.equal(reads.get('relay-0001'), 2, 'three queries read the damaged file twice in all (once more when first found damaged, its stat taken between)');
  const waited = await store.wait({ after: 'relay-0000', timeoutMs: 0, filter: text(store, 'needle') });
  assert.deepEqual(waited.appeared, []);
  assert.equal(reads.get('relay-0001'), 2, 'nor does a wait over it');
  await writeFile(file, whole);
  assert.deepEqual((await store.listIds(undefined, text(store, 'needle'))).present.map(store.shape.format), ['relay-0001'], 'once changed, it is read again');
  assert.equal(reads.get('relay-0001'), 3);
});

test('a removed record\'s words no longer find its id, and a record deposited under it again is found by its own', async (t) => {
  const { store, corpus } = await fresh(t);
  await add(store, {}, 'the removed secret');
  await add(store, {}, 'after it');
  assert.deepEqual((await store.listIds(undefined, text(store, 'secret'))).present.map(store.shape.format), ['relay-0001']);
  const live = store.wait({ after: 'relay-0000', timeoutMs: 10_000, filter: text(store, 'replacement') });
  await unlink(corpusPaths(corpus).record('relay-0001'));
  await store.append(Buffer.from(record({}, 'the replacement')), { ...BY, id: 'relay-0001' });
  assert.deepEqual((await live).appeared.map((item) => item.id), ['relay-0001'], 'a live text wait hears the new record by its words');
  assert.deepEqual((await store.listIds(undefined, text(store, 'secret'))).present, [], 'the removed text finds nothing');
  assert.deepEqual((await store.listIds(undefined, text(store, 'replacement'))).present.map(store.shape.format), ['relay-0001']);
  assert.deepEqual((await store.listIds(undefined, text(store, 'the'))).present.map(store.shape.format), ['relay-0001']);
});

test('a record whose words the table cannot take (V8\'s Map full) is held by their hashes: every later search still answers', async (t) => {
  const { store } = await fresh(t);
  await add(store, {}, 'first words');
  assert.deepEqual((await store.listIds(undefined, text(store, 'first'))).present.map(store.shape.format), ['relay-0001']);
  const words = (textIndexOf(store) as unknown as { table: { words: Map<string, number> } }).table.words;
  words.set = () => {
    throw new RangeError('Map maximum size exceeded');
  };
  await add(store, {}, 'second words, new ones');
  await add(store, {}, 'third words');
  assert.deepEqual((await store.listIds(undefined, text(store, 'new ones'))).present.map(store.shape.format), ['relay-0002']);
  assert.deepEqual((await store.listIds(undefined, text(store, 'words'))).present.map(store.shape.format), ['relay-0001', 'relay-0002', 'relay-0003']);
  const waited = await store.wait({ after: 'relay-0001', timeoutMs: 0, filter: text(store, 'third') });
  assert.deepEqual(waited.appeared.map((item) => item.id), ['relay-0003']);
  assert.equal(textIndexOf(store).footprint.hashed, 2);
});

test('a record with more distinct words than one record may put in the table is found by any of them', async (t) => {
  const { store } = await fresh(t, { textIndex: { recordWords: 10 } });
  await add(store, { kind: 'log' }, Array.from({ length: 50 }, (_, i) => `word${i}`).join(' '));
  await add(store, {}, 'word7 once more');
  assert.deepEqual((await store.listIds(undefined, text(store, 'word7'))).present.map(store.shape.format), ['relay-0001', 'relay-0002']);
  assert.deepEqual((await store.listIds(undefined, text(store, 'word49 log'))).present.map(store.shape.format), ['relay-0001']);
  assert.deepEqual((await store.listIds(undefined, text(store, 'word50'))).present, []);
  assert.deepEqual(textIndexOf(store).footprint.hashed, 1);
});

test('past its budget a text search is refused text_index_full, a live text wait still answers, and other filters are untouched', async (t) => {
  const { store } = await fresh(t, { textIndex: { bytes: 4096 } });
  for (let i = 0; i < 20; i++) await add(store, { kind: 'note' }, Array.from({ length: 10 }, (_, j) => `w${i}x${j}`).join(' '));
  await assert.rejects(store.listIds(undefined, text(store, 'w0x0')), { code: 'text_index_full' });
  await assert.rejects(store.wait({ after: 'relay-0000', timeoutMs: 0, filter: text(store, 'w0x0') }), { code: 'text_index_full' });
  await assert.rejects(store.listIds(undefined, text(store, 'w0x0')), { code: 'text_index_full' }, 'and again, the same way');
  const live = store.wait({ timeoutMs: 10_000, filter: text(store, 'late') });
  await add(store, {}, 'a late one');
  assert.deepEqual((await live).appeared.map((item) => item.id), ['relay-0021']);
  assert.equal((await store.listIds(undefined, parseFilter({ kind: 'note' }, store.shape))).present.length, 20);
  assert.ok(textIndexOf(store).footprint.bytes <= 4096);
});

test('a second store of the corpus takes the first one\'s words from .state/text-index: it reads only the newest few records', async (t) => {
  const { corpus } = await tempStore(t);
  const first = await openStore({ corpus, watch: 'none', textIndex: { shareAfter: 5 } });
  for (let i = 1; i <= 30; i++) await add(first, { kind: 'note' }, `note ${i}${i === 3 ? ' needle' : ''}`);
  assert.deepEqual((await first.listIds(undefined, text(first, 'needle'))).present.map(first.shape.format), ['relay-0003']);
  await first.close(); // lets the write finish
  const { reader, reads } = countingReader();
  const second = await openStore({ corpus, watch: 'none', reader });
  t.after(() => second.close());
  await add(second, {}, 'a needle after');
  reads.clear(); // the start-up scan's
  assert.deepEqual((await second.listIds(undefined, text(second, 'needle'))).present.map(second.shape.format), ['relay-0003', 'relay-0031']);
  assert.deepEqual((await second.listIds(undefined, text(second, 'note 7'))).present.map(second.shape.format), ['relay-0007']);
  const read = [...reads.keys()].sort();
  assert.deepEqual(read, ['relay-0023', 'relay-0024', 'relay-0025', 'relay-0026', 'relay-0027', 'relay-0028', 'relay-0029', 'relay-0030', 'relay-0031'],
    'the newest 8 rows of the file, checked against their records, and the record it lacks');
});

test('a shared text index that says other words than its records is not used, and a FIFO in its place is passed over', async (t) => {
  const { corpus } = await tempStore(t);
  const first = await openStore({ corpus, watch: 'none', textIndex: { shareAfter: 1 } });
  for (let i = 1; i <= 3; i++) await add(first, {}, i === 3 ? 'needle' : `hay ${i}`);
  await first.listIds(undefined, text(first, 'hay'));
  await first.close();
  const file = corpusPaths(corpus).textIndex;
  const bytes = await readFile(file);
  assert.ok(bytes.includes('needle\n'));
  await writeFile(file, Buffer.from(bytes.toString('latin1').replace('needle\n', 'nexdle\n'), 'latin1'));
  const second = await openStore({ corpus, watch: 'none' });
  t.after(() => second.close());
  assert.deepEqual((await second.listIds(undefined, text(second, 'nexdle'))).present, []);
  assert.deepEqual((await second.listIds(undefined, text(second, 'needle'))).present.map(second.shape.format), ['relay-0003']);
  await unlink(file);
  const made = await new Promise<number | null>((resolve) => spawn('mkfifo', [file]).on('close', resolve).on('error', () => resolve(null)));
  if (made !== 0) return t.skip('mkfifo is not available here');
  const third = await openStore({ corpus, watch: 'none' });
  t.after(() => third.close());
  assert.deepEqual((await third.listIds(undefined, text(third, 'needle'))).present.map(third.shape.format), ['relay-0003'], 'answered, not blocked on the FIFO');
});
