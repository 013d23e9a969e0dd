import assert from 'node:assert/strict';
import { appendFile, mkdir, readFile, unlink, writeFile, readdir } from 'node:fs/promises';
import { test, type TestContext } from 'node:test';
import path from 'node:path';
import { RelayError } from '../../lib/errors.js';
import { buildRecordFile, digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { openStore, RelayStore, type StoreOptions } from '../../lib/store/store.js';
import { record, tempStore } from '../support/helpers.js';
import { refused } from '../support/refusal.js';

const BY = { depositedBy: 'cli/test' };
const rec = (headers: Record<string, string> = {}, body = 'hello') => Buffer.from(record(headers, body));

async function open(t: TestContext, corpus: string, options: Partial<StoreOptions> = {}): Promise<RelayStore> {
  const store = await openStore({ corpus, ...options });
  t.after(() => store.close());
  return store;
}

/** A fresh store (no watcher: these tests are about one process). */
async function fresh(t: TestContext, options: { idWidth?: number } = {}): Promise<{ store: RelayStore; corpus: string }> {
  const { corpus } = await tempStore(t, options);
  return { store: await open(t, corpus, { watch: 'none' }), corpus };
}

async function appendMany(store: RelayStore, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await store.append(rec({}, `n${i}`), BY)).id);
  return ids;
}

// ---- assignment ------------------------------------------------------------

test('appends without an id take relay-0001, relay-0002, … and answer what was stored', async (t) => {
  const { store, corpus } = await fresh(t);
  const bytes = rec({ kind: 'note' });
  const first = await store.append(bytes, { depositedBy: 'mcp' });
  assert.equal(first.id, 'relay-0001');
  assert.equal(first.digest, digestOf(bytes));
  assert.equal(first.depositedBy, 'mcp');
  assert.equal(first.provenance, 'as-received');
  assert.ok(!Number.isNaN(Date.parse(first.depositedAt)));
  assert.equal((await store.append(rec(), BY)).id, 'relay-0002');
  const split = splitRecordFile(await readFile(corpusPaths(corpus).record('relay-0001')));
  assert.deepEqual(split.record, bytes);
  assert.deepEqual(split.deposit, { provenance: 'as-received', depositedBy: 'mcp', depositedAt: first.depositedAt, digest: first.digest });
});

test('provenance authored is written when asked for', async (t) => {
  const { store } = await fresh(t);
  const result = await store.append(rec(), { depositedBy: 'cli/alice', provenance: 'authored' });
  assert.equal(result.provenance, 'authored');
  assert.match((await store.read(result.id)).toString(), /^provenance: authored\ndeposited-by: cli\/alice\n/);
});

test('citing ids does not move the next free id (spec §8c): a record citing the next 64 ids takes one id', async (t) => {
  const { store } = await fresh(t);
  const ahead = Array.from({ length: 64 }, (_, i) => store.shape.format(i + 2)).join(' ');
  await store.append(rec({ ref: ahead }), BY); // relay-0001 cites relay-0002 … relay-0065
  assert.equal((await store.exists('relay-0002')).state, 'KNOWN_MISSING', 'a cited id is still KNOWN_MISSING');
  assert.equal((await store.append(rec(), BY)).id, 'relay-0002');
  assert.equal((await store.append(rec(), BY)).id, 'relay-0003');
});

test('concurrent appends in one process get distinct, contiguous ids', async (t) => {
  const { store } = await fresh(t);
  const results = await Promise.all(Array.from({ length: 40 }, (_, i) => store.append(rec({}, `c${i}`), BY)));
  const ids = results.map((r) => r.id).sort();
  assert.deepEqual(ids, Array.from({ length: 40 }, (_, i) => store.shape.format(i + 1)));
});

test('a store emits record for each append and leaves nothing in .state/tmp', async (t) => {
  const { store, corpus } = await fresh(t);
  const seen: string[] = [];
  store.on('record', (meta) => seen.push(meta.id));
  await appendMany(store, 3);
  assert.deepEqual(seen, ['relay-0001', 'relay-0002', 'relay-0003']);
  assert.deepEqual(await readdir(corpusPaths(corpus).tmp), []);
});

// ---- proposals -------------------------------------------------------------

test('a proposal may fill a gap below the next free id', async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus, watch: 'none' });
  await appendMany(writer, 4);
  await writer.close();
  await unlink(corpusPaths(corpus).record('relay-0002'));
  await unlink(corpusPaths(corpus).record('relay-0003'));
  const store = await open(t, corpus, { watch: 'none' });
  assert.equal((await store.append(rec(), { ...BY, id: 'relay-0003' })).id, 'relay-0003');
  assert.equal((await store.append(rec(), { ...BY, id: 'relay-0002' })).id, 'relay-0002');
  assert.equal((await store.append(rec(), BY)).id, 'relay-0005', 'filling gaps does not move the next free id');
});

test('a proposal may re-deposit a lost record: a KNOWN_MISSING id at or below the high-water mark', async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus, watch: 'none' });
  await appendMany(writer, 2);
  await writer.append(rec({ parent: 'relay-0002' }), BY); // relay-0003 cites relay-0002
  await writer.close();
  await unlink(corpusPaths(corpus).record('relay-0002'));
  const store = await open(t, corpus, { watch: 'none' });
  assert.equal((await store.exists('relay-0002')).state, 'KNOWN_MISSING');
  assert.equal((await store.append(rec(), { ...BY, id: 'relay-0002' })).id, 'relay-0002');
  assert.equal((await store.exists('relay-0002')).state, 'PRESENT');
});

test('a KNOWN_MISSING id above the high-water mark is a proposal ahead like any other (spec §8c)', async (t) => {
  const { store, corpus } = await fresh(t);
  await store.append(rec({ parent: 'relay-9999' }), BY);
  const err = await refused(store.append(rec(), { ...BY, id: 'relay-9999' }), 'id_ahead');
  assert.equal(err.details.nextFree, 'relay-0002');
  assert.equal((await store.append(rec(), BY)).id, 'relay-0002', 'assignment goes on for everyone');
  assert.deepEqual((await readdir(corpus)).filter((n) => n.startsWith('relay-')).sort(), ['relay-0001', 'relay-0002']);
});

test('a proposal may take the next free id itself', async (t) => {
  const { store } = await fresh(t);
  await appendMany(store, 2);
  assert.equal((await store.append(rec(), { ...BY, id: 'relay-0003' })).id, 'relay-0003');
  assert.equal((await store.append(rec(), BY)).id, 'relay-0004');
});

test('a proposal beyond the next free id is refused as id_ahead, naming the next free id', async (t) => {
  const { store, corpus } = await fresh(t);
  await appendMany(store, 2);
  const err = await refused(store.append(rec(), { ...BY, id: 'relay-0005' }), 'id_ahead');
  assert.equal(err.details.nextFree, 'relay-0003');
  assert.ok(err.message.includes('relay-0003'));
  await refused(store.append(rec(), { ...BY, id: 'relay-9999' }), 'id_ahead');
  assert.deepEqual((await readdir(corpus)).filter((n) => n.startsWith('relay-')).sort(), ['relay-0001', 'relay-0002']);
});

test('a proposal that is held is refused as id_held, saying the bytes are identical', async (t) => {
  const { store } = await fresh(t);
  const bytes = rec({ kind: 'note' }, 'same');
  await store.append(bytes, BY);
  const err = await refused(store.append(bytes, { ...BY, id: 'relay-0001' }), 'id_held');
  assert.equal(err.details.identical, true);
  assert.equal(err.details.id, 'relay-0001');
});

test('a proposal that is held by different bytes is refused with identical false', async (t) => {
  const { store } = await fresh(t);
  await store.append(rec({}, 'one'), BY);
  const err = await refused(store.append(rec({}, 'two'), { ...BY, id: 'relay-0001' }), 'id_held');
  assert.equal(err.details.identical, false);
});

for (const id of ['relay-33', 'RELAY-0001', 'relay-0001 ', '../x', 'relay-0000', 'relay-000001', '']) {
  test(`a proposal of ${JSON.stringify(id)} is refused as bad_id, showing the expected shape`, async (t) => {
    const { store, corpus } = await fresh(t);
    const err = await refused(store.append(rec(), { ...BY, id }), 'bad_id');
    assert.ok(err.message.includes('relay-0033'), err.message);
    assert.deepEqual((await readdir(corpus)).filter((n) => !n.startsWith('.')), []);
  });
}

test('a bad record is refused before anything is written', async (t) => {
  const { store, corpus } = await fresh(t);
  await refused(store.append(Buffer.from('hello'), BY), 'bad_record');
  await refused(store.append(Buffer.from('@p-e/x0\n\n\0'), BY), 'bad_record');
  assert.deepEqual(await readdir(corpusPaths(corpus).tmp), []);
  assert.equal((await store.append(rec(), BY)).id, 'relay-0001');
});

test('the size limit is configurable', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus, { watch: 'none', maxRecordBytes: 64 });
  await store.append(rec({}, 'x'.repeat(40)), BY);
  await refused(store.append(rec({}, 'x'.repeat(60)), BY), 'too_large');
});

// ---- ids are never reused ----------------------------------------------------

test('an id whose record file was deleted is not handed out again', async (t) => {
  const { store, corpus } = await fresh(t);
  await appendMany(store, 3);
  await unlink(corpusPaths(corpus).record('relay-0003'));
  assert.equal((await store.append(rec(), BY)).id, 'relay-0004');
});

test('nor after a reopen: the .state/issued log keeps the high-water mark', async (t) => {
  const { corpus } = await tempStore(t);
  const first = await openStore({ corpus, watch: 'none' });
  await appendMany(first, 3);
  await first.close();
  await unlink(corpusPaths(corpus).record('relay-0003'));
  await unlink(corpusPaths(corpus).record('relay-0002'));
  const again = await open(t, corpus, { watch: 'none' });
  assert.equal((await again.exists('relay-0003')).state, 'UNKNOWN', 'the index reports what the disk holds');
  assert.equal((await again.append(rec(), BY)).id, 'relay-0004');
});

test('when the id space is used up, appends are refused as ids_exhausted', async (t) => {
  const { corpus } = await tempStore(t);
  await mkdir(corpusPaths(corpus).state, { recursive: true });
  // The log is believed that far because a record near it is held (issued-log.ts).
  const near = rec();
  await writeFile(path.join(corpus, 'relay-9990'), buildRecordFile({ provenance: 'as-received', depositedBy: 'test', depositedAt: new Date().toISOString(), digest: digestOf(near) }, near));
  await writeFile(corpusPaths(corpus).issued, 'relay-9998\n');
  const store = await open(t, corpus, { watch: 'none' });
  assert.equal((await store.append(rec(), BY)).id, 'relay-9999');
  const err = await refused(store.append(rec(), BY), 'ids_exhausted');
  assert.ok(err.message.includes('relay-9999'), err.message);
  assert.equal((await store.append(rec(), { ...BY, id: 'relay-0001' })).id, 'relay-0001', 'a gap can still be filled');
  const ahead = await refused(store.append(rec(), { ...BY, id: 'relay-9999' }), 'id_held');
  assert.equal(ahead.details.id, 'relay-9999');
});

// ---- reading -----------------------------------------------------------------

test('read returns the exact file bytes', async (t) => {
  const { store, corpus } = await fresh(t);
  const { id } = await store.append(rec({ kind: 'note' }, 'body\r\nwith CRLF'), BY);
  assert.deepEqual(await store.read(id), await readFile(corpusPaths(corpus).record(id)));
});

test('read re-checks the digest: an edited file is refused as damaged, and exists still says PRESENT', async (t) => {
  const { store, corpus } = await fresh(t);
  const { id } = await store.append(rec({}, 'original'), BY);
  const file = corpusPaths(corpus).record(id);
  const text = await readFile(file, 'utf8');
  await unlink(file); // the store writes records read-only; an editor replaces them
  await writeFile(file, text.replace('original', 'tampered'));
  const err = await refused(store.read(id), 'damaged');
  assert.equal(err.details.state, 'PRESENT');
  assert.equal((await store.exists(id)).state, 'PRESENT');
});

test('read of an id that is not held is not_found, naming its state', async (t) => {
  const { store } = await fresh(t);
  await store.append(rec({ parent: 'relay-0009' }), BY);
  assert.equal((await refused(store.read('relay-0009'), 'not_found')).details.state, 'KNOWN_MISSING');
  assert.equal((await refused(store.read('relay-0002'), 'not_found')).details.state, 'UNKNOWN');
  for (const id of ['relay-1', '../x', 'relay-0000', 'relay-0001 ']) {
    assert.equal((await refused(store.read(id), 'not_found')).details.state, 'UNKNOWN');
  }
});

test('a record file that vanished is dropped from the index when read', async (t) => {
  const { store, corpus } = await fresh(t);
  await appendMany(store, 2);
  await unlink(corpusPaths(corpus).record('relay-0002'));
  assert.equal((await refused(store.read('relay-0002'), 'not_found')).details.state, 'UNKNOWN');
  assert.deepEqual((await store.list()).present, ['relay-0001']);
});

test('exists: PRESENT, KNOWN_MISSING, UNKNOWN; malformed ids are UNKNOWN', async (t) => {
  const { store } = await fresh(t);
  await store.append(rec({ parent: 'relay-0033' }), BY);
  assert.deepEqual(await store.exists('relay-0001'), { id: 'relay-0001', state: 'PRESENT' });
  assert.deepEqual(await store.exists('relay-0033'), { id: 'relay-0033', state: 'KNOWN_MISSING' });
  assert.deepEqual(await store.exists('relay-0002'), { id: 'relay-0002', state: 'UNKNOWN' });
  for (const id of ['relay-33', 'RELAY-0033', 'relay-0033 ', '../x', 'relay-0000']) {
    assert.deepEqual(await store.exists(id), { id, state: 'UNKNOWN' });
  }
});

test('list: every held and KNOWN_MISSING id; after is exclusive and filters both', async (t) => {
  const { store } = await fresh(t);
  await store.append(rec({ ref: 'relay-0004 relay-0007' }), BY); // 1; 4 and 7 missing
  await appendMany(store, 2); // 2, 3 (citing an id reserves nothing: spec §8c)
  assert.deepEqual(await store.list(), { after: null, present: ['relay-0001', 'relay-0002', 'relay-0003'], knownMissing: ['relay-0004', 'relay-0007'] });
  assert.deepEqual(await store.list('relay-0000'), { after: 'relay-0000', present: ['relay-0001', 'relay-0002', 'relay-0003'], knownMissing: ['relay-0004', 'relay-0007'] });
  assert.deepEqual(await store.list('relay-0002'), { after: 'relay-0002', present: ['relay-0003'], knownMissing: ['relay-0004', 'relay-0007'] });
  assert.deepEqual(await store.list('relay-0004'), { after: 'relay-0004', present: [], knownMissing: ['relay-0007'] });
  assert.deepEqual(await store.list('relay-0007'), { after: 'relay-0007', present: [], knownMissing: [] });
  // Past every id the store holds, issued or cited, a list after it is ahead (test/store/follow/after-ahead.process.test.ts).
  await refused(store.list('relay-0008'), 'id_ahead');
});

test('list refuses a malformed after', async (t) => {
  const { store } = await fresh(t);
  for (const after of ['relay-2', 'RELAY-0002', 'relay-0002 ', '../x', '']) await refused(store.list(after), 'bad_id');
});

test('replies: records naming an id in parent or ref, one level, in id order, each with its parent and refs', async (t) => {
  const { store } = await fresh(t);
  await store.append(rec({ kind: 'question' }), BY); // 1
  await store.append(rec({ kind: 'reply', from: 'b', to: 'a', parent: 'relay-0001' }), BY); // 2
  await store.append(rec({ kind: 'reply', parent: 'relay-0002' }), BY); // 3: a reply to a reply
  await store.append(rec({ kind: 'note', ref: 'relay-0002, relay-0001' }), BY); // 4
  const replies = await store.replies('relay-0001');
  // Each with a wait item's deposit fields too (the listing says they are wait's fields).
  const deposit = (r: { depositedBy: string; provenance: string; depositedAt: string }) => ({ depositedBy: r.depositedBy, provenance: r.provenance, depositedAt: r.depositedAt });
  assert.deepEqual(replies.replies.map(deposit), [2, 4].map((n) => deposit(store.heldAfter(n - 1)[0]!.meta)));
  assert.deepEqual(replies, {
    parent: 'relay-0001',
    replies: [
      { id: 'relay-0002', kind: 'reply', from: 'b', to: 'a', parent: 'relay-0001', refs: [], ...deposit(replies.replies[0]!) },
      { id: 'relay-0004', kind: 'note', from: null, to: null, parent: null, refs: ['relay-0002', 'relay-0001'], ...deposit(replies.replies[1]!) },
    ],
  });
  assert.deepEqual((await store.replies('relay-0002')).replies.map((r) => r.id), ['relay-0003', 'relay-0004']);
  assert.deepEqual(await store.replies('relay-0004'), { parent: 'relay-0004', replies: [] });
  assert.deepEqual(await store.replies('relay-1'), { parent: 'relay-1', replies: [] });
});

// ---- waiting -------------------------------------------------------------------

test('wait with after returns at once with what is held after the mark', async (t) => {
  const { store } = await fresh(t);
  await appendMany(store, 3);
  const result = await store.wait({ after: 'relay-0001', timeoutMs: 60_000 });
  assert.deepEqual(result.appeared.map((r) => r.id), ['relay-0002', 'relay-0003']);
  assert.equal(result.timedOut, false);
  const { depositedAt, ...item } = result.appeared[0]!;
  assert.deepEqual(item, { id: 'relay-0002', kind: null, from: null, to: null, parent: null, refs: [], depositedBy: 'cli/test', provenance: 'as-received' });
  assert.equal(new Date(depositedAt).toISOString(), depositedAt);
});

test('wait with after blocks until an append lands', async (t) => {
  const { store } = await fresh(t);
  await appendMany(store, 1);
  const pending = store.wait({ after: 'relay-0001', timeoutMs: 60_000 });
  const { id } = await store.append(rec({ kind: 'answer' }), BY);
  const result = await pending;
  assert.deepEqual(result.appeared.map((r) => [r.id, r.kind]), [[id, 'answer']]);
});

test('wait without after ignores held records and wakes on the next append', async (t) => {
  const { store } = await fresh(t);
  await appendMany(store, 2);
  const pending = store.wait({ timeoutMs: 60_000 });
  await new Promise((r) => setImmediate(r));
  assert.equal(store.waiters.count, 1);
  await store.append(rec(), BY);
  assert.deepEqual((await pending).appeared.map((r) => r.id), ['relay-0003']);
});

test('wait times out with nothing', async (t) => {
  const { store } = await fresh(t);
  const result = await store.wait({ after: 'relay-0000', timeoutMs: 50 });
  assert.deepEqual(result, { appeared: [], timedOut: true, waitedMs: result.waitedMs, cursor: 'relay-0000' });
  assert.ok(result.waitedMs >= 45);
});

test('an aborted wait ends at once and leaves no waiter behind', async (t) => {
  const { store } = await fresh(t);
  const ac = new AbortController();
  const pending = store.wait({ timeoutMs: 60_000, signal: ac.signal });
  await new Promise((r) => setImmediate(r));
  ac.abort();
  const result = await pending;
  assert.equal(result.timedOut, false);
  assert.deepEqual(result.appeared, []);
  assert.equal(store.waiters.count, 0);
});

test('wait refuses a malformed after', async (t) => {
  const { store } = await fresh(t);
  await refused(store.wait({ after: 'relay-1', timeoutMs: 10 }), 'bad_id');
});

// ---- a wider store, a mirror, other writers ----------------------------------------

test('a store created with id width 6 uses six-digit ids everywhere', async (t) => {
  const { store, corpus } = await fresh(t, { idWidth: 6 });
  assert.equal(store.shape.width, 6);
  assert.equal((await store.append(rec({ parent: 'relay-000009' }), BY)).id, 'relay-000001');
  assert.equal((await store.exists('relay-000009')).state, 'KNOWN_MISSING');
  assert.equal((await store.exists('relay-0001')).state, 'UNKNOWN');
  await refused(store.append(rec(), { ...BY, id: 'relay-0002' }), 'bad_id');
  assert.deepEqual(await store.list('relay-000000'), { after: 'relay-000000', present: ['relay-000001'], knownMissing: ['relay-000009'] });
  await refused(store.list('relay-0000'), 'bad_id');
  assert.ok((await readdir(corpus)).includes('relay-000001'));
});

test('a corpus marked as a mirror refuses appends as read_only', async (t) => {
  const { corpus } = await tempStore(t);
  await writeFile(corpusPaths(corpus).mirrorMark, 'https://hub.example/\n');
  const store = await open(t, corpus, { watch: 'none' });
  const err = await refused(store.append(rec(), BY), 'read_only');
  assert.equal(err.details.primary, 'https://hub.example/');
});

test('open scans what is on disk: records, damaged ones, and nothing but id-shaped names', async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus, watch: 'none' });
  await writer.append(rec({ ref: 'relay-0009' }), BY);
  await writer.append(rec(), BY);
  await writer.close();
  await appendFile(corpusPaths(corpus).record('relay-0002'), 'extra'); // damaged
  for (const name of ['.relay-0005.Ab12Cd', 'relay-0006~', 'relay-06', 'README.md', 'RELAY-0007']) await writeFile(`${corpus}/${name}`, 'x');
  const store = await open(t, corpus, { watch: 'none' });
  assert.deepEqual(await store.list(), { after: null, present: ['relay-0001', 'relay-0002'], knownMissing: ['relay-0009'] });
  await refused(store.read('relay-0002'), 'damaged');
  assert.equal((await store.append(rec(), BY)).id, 'relay-0003');
});

test('a record linked by another process wakes a waiter here (watcher)', async (t) => {
  const { corpus } = await tempStore(t);
  const watching = await open(t, corpus);
  const other = await open(t, corpus, { watch: 'none' });
  const pending = watching.wait({ after: 'relay-0000', timeoutMs: 10_000 });
  const { id } = await other.append(rec({ kind: 'ping' }), BY);
  const result = await pending;
  assert.deepEqual(result.appeared.map((r) => r.id), [id]);
  assert.equal(result.timedOut, false);
});

test('reconciling scans while appending never drops a record just written', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus, { watch: 'poll', reconcileMs: 1 });
  const removed: string[] = [];
  store.on('removed', (id) => removed.push(id));
  await Promise.all(Array.from({ length: 150 }, (_, i) => store.append(rec({}, `r${i}`), BY)));
  assert.deepEqual(removed, []);
  assert.equal((await store.list()).present.length, 150);
});

test('an append that loses a race for an id indexes what the winner published and takes the next one', async (t) => {
  const { corpus } = await tempStore(t);
  const a = await open(t, corpus, { watch: 'none' });
  const b = await open(t, corpus, { watch: 'none' }); // another process that has not seen a's record yet
  await a.append(rec({ kind: 'question', ref: 'relay-0002' }), BY); // relay-0001 cites relay-0002
  const { id } = await b.append(rec({ kind: 'unrelated' }), BY); // b tries relay-0001 first: EEXIST
  assert.equal(id, 'relay-0002', 'a cited id above the high-water mark is not reserved (spec §8c)');
  assert.equal((await b.exists('relay-0001')).state, 'PRESENT', 'b indexed the record it lost the race to');
});

test('a wait cut short before its catch-up was sent keeps its mark as the cursor, so passing it back misses nothing', async (t) => {
  const { store } = await fresh(t);
  await appendMany(store, 3);
  const cut = await store.wait({ after: 'relay-0000', timeoutMs: 5000, signal: AbortSignal.abort() });
  assert.deepEqual([cut.appeared, cut.timedOut, cut.cursor], [[], false, 'relay-0000']);
  const next = await store.wait({ after: cut.cursor, timeoutMs: 0 });
  assert.deepEqual(next.appeared.map((r) => r.id), ['relay-0001', 'relay-0002', 'relay-0003']);
});

test('a wait cut short while blocked, its catch-up sent, answers the cursor of everything it considered', async (t) => {
  const { store } = await fresh(t);
  await appendMany(store, 2);
  const stop = new AbortController();
  const waiting = store.wait({ after: 'relay-0002', timeoutMs: 5000, signal: stop.signal });
  setImmediate(() => stop.abort());
  const cut = await waiting;
  assert.deepEqual([cut.appeared, cut.timedOut, cut.cursor], [[], false, 'relay-0002']);
});
