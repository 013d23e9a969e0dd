/**
 * The text filter in a real store: the index of words is built from the
 * record files on the first text query, kept current with what lands after,
 * and combined with the other filters by every query that takes a filter.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { test, type TestContext } from 'node:test';
import { corpusPaths } from '../../../lib/disk/paths.js';
import { buildRecordFile, digestOf } from '../../../lib/model/deposit.js';
import { parseFilter } from '../../../lib/model/filter.js';
import { idShape } from '../../../lib/model/ids.js';
import { filterKey } from '../../../lib/store/agents/filter-key.js';
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
