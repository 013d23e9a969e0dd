import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { buildRecordFile, digestOf } from '../../../lib/model/deposit.js';
import { idShape } from '../../../lib/model/ids.js';
import { createLogger } from '../../../lib/log.js';
import { verifyCorpus } from '../../../lib/ops/verify.js';
import { decodeSnapshot, encodeSnapshot, SNAPSHOT_FORMAT, type Snapshot } from '../../../lib/store/index/index-snapshot.js';
import { corpusPaths } from '../../../lib/disk/paths.js';
import { openStore, type RelayStore } from '../../../lib/store/store.js';
import { runCli, stdioClient, tempStore, textOf } from '../../support/helpers.js';

const shape = idShape(4);

/** A record file written straight to disk, as another writer (rsync, git) would leave it. */
async function put(corpus: string, n: number, headers: string[], body = `record ${n}`): Promise<void> {
  const bytes = Buffer.from(['@p-e/x0', ...headers, '', body].join('\n'));
  const deposit = { provenance: (n % 7 === 0 ? 'authored' : 'as-received') as 'authored' | 'as-received', depositedBy: `mcp/agent-${n % 5}`, depositedAt: new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString(), digest: digestOf(bytes) };
  writeFileSync(path.join(corpus, shape.format(n)), buildRecordFile(deposit, bytes)); // synchronously: a thread-pool round trip each saved
}

/** 600 records (enough for a store to write a snapshot) that reply to and cite each other, and cite a few ids that are not held (KNOWN_MISSING). */
async function conversation(corpus: string): Promise<void> {
  for (let n = 1; n <= 600; n++) {
    const headers = [`kind: ${n % 3 ? 'note' : 'reply'}`, `from: agent-${n % 4}`];
    if (n % 2) headers.push(`to: agent-${(n + 1) % 4}`);
    if (n > 1 && n % 3 === 0) headers.push(`parent: ${shape.format(n - 1 - (n % 5))}`);
    if (n % 10 === 0) headers.push(`ref: ${shape.format(n + 200)} ${shape.format(Math.max(1, n - 9))}`);
    await put(corpus, n, headers);
  }
}

/** Every answer the store gives about every id up to `upTo`, and its lists. */
async function answers(store: RelayStore, upTo = 900): Promise<unknown> {
  const byId: unknown[] = [];
  for (let n = 1; n <= upTo; n++) {
    const id = shape.format(n);
    byId.push([(await store.exists(id)).state, (await store.replies(id)).replies]);
  }
  return { list: await store.list(), held: store.heldAfter(0), byId };
}

/** The answers of a store opened on `corpus` as it is (snapshot and all), then of a full scan of the same files. */
async function fromSnapshotAndFromScan(corpus: string): Promise<{ snapshot: unknown; scan: unknown; log: string }> {
  let log = '';
  const store = await openStore({ corpus, log: createLogger('debug', (line) => (log += line)) });
  const snapshot = await answers(store);
  await store.close();
  await fs.rm(corpusPaths(corpus).snapshot, { force: true });
  const full = await openStore({ corpus });
  const scan = await answers(full);
  await full.close();
  return { snapshot, scan, log };
}

/** Opens and closes a store, leaving a snapshot of what it read. */
async function leaveSnapshot(corpus: string): Promise<Buffer> {
  const store = await openStore({ corpus });
  await store.close();
  return fs.readFile(corpusPaths(corpus).snapshot);
}

test('a store leaves a snapshot, and the next one answers from it without reading a record', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  const { snapshot, scan, log } = await fromSnapshotAndFromScan(corpus);
  assert.match(log, /indexed 600 records .*\(snapshot, then 0 read and 0 dropped\)/);
  assert.deepEqual(snapshot, scan);
});

test('a snapshot of another format (an older build) is not read: the answers are a full scan\'s', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  const file = await leaveSnapshot(corpus);
  // Make its contents wrong as well, so that reading it would show.
  const read = decodeSnapshot(file, 4);
  assert.ok('snapshot' in read);
  read.snapshot.image.kind.fill(0);
  const old = encodeSnapshot(read.snapshot);
  old.writeUInt32LE(SNAPSHOT_FORMAT - 1, 8);
  await fs.writeFile(corpusPaths(corpus).snapshot, old);
  const { snapshot, scan, log } = await fromSnapshotAndFromScan(corpus);
  assert.match(log, /of format \d+, written by another version/);
  assert.deepEqual(snapshot, scan);
});

test('a truncated snapshot, or one with a byte changed, is not read', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  const file = await leaveSnapshot(corpus);
  for (const [bad, why] of [[file.subarray(0, file.length - 100), /torn, or cut short/], [flipByte(file, 200), /checksum does not match/]] as const) {
    await fs.writeFile(corpusPaths(corpus).snapshot, bad);
    const { snapshot, scan, log } = await fromSnapshotAndFromScan(corpus);
    assert.match(log, why);
    assert.deepEqual(snapshot, scan);
  }
});

test('a snapshot naming records the disk has lost: they are dropped, and ids they named become what a scan says', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  // relay-0009 is a parent of relay-0012 (so it turns KNOWN_MISSING); relay-0600 is named by nothing.
  await fs.rm(path.join(corpus, 'relay-0009'));
  await fs.rm(path.join(corpus, 'relay-0600'));
  const { snapshot, scan, log } = await fromSnapshotAndFromScan(corpus);
  assert.match(log, /relay-0009 vanished from disk/);
  assert.deepEqual(snapshot, scan);
  const held = (scan as { list: { present: string[]; knownMissing: string[] } }).list;
  assert.ok(!held.present.includes('relay-0009') && held.knownMissing.includes('relay-0009'));
});

test('a snapshot missing records another writer added since: they are read and indexed with what they claim', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  await put(corpus, 601, ['kind: reply', 'from: late', 'parent: relay-0600', 'ref: relay-0890']);
  await put(corpus, 790, ['kind: note', 'from: filler']); // fills an id relay-0590 cited: no longer KNOWN_MISSING
  const { snapshot, scan, log } = await fromSnapshotAndFromScan(corpus);
  assert.match(log, /snapshot, then 2 read and 0 dropped/);
  assert.deepEqual(snapshot, scan);
});

test('a snapshot ahead of the issued log (.state copied from elsewhere) is not read', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  await fs.writeFile(corpusPaths(corpus).issued, 'relay-0003\n');
  const { snapshot, scan, log } = await fromSnapshotAndFromScan(corpus);
  assert.match(log, /not using the index snapshot: it knows ids up to 600 were issued/);
  assert.deepEqual(snapshot, scan);
});

test('two processes writing the snapshot at once leave one whole snapshot that answers what a scan does', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  for (let round = 0; round < 3; round++) {
    await fs.rm(corpusPaths(corpus).snapshot, { force: true });
    const runs = await Promise.all([runCli(['ls', '--corpus', corpus]), runCli(['ls', '--corpus', corpus]), runCli(['ls', '--corpus', corpus])]);
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    const read = decodeSnapshot(await fs.readFile(corpusPaths(corpus).snapshot), 4);
    assert.ok('snapshot' in read, 'refused' in read ? read.refused : '');
    assert.equal(read.snapshot.image.ids.length, 600);
  }
  assert.deepEqual(await fs.readdir(corpusPaths(corpus).tmp), [], 'no temp file left behind');
  const { snapshot, scan, log } = await fromSnapshotAndFromScan(corpus);
  assert.match(log, /snapshot, then 0 read/);
  assert.deepEqual(snapshot, scan);
});

test('a record damaged on disk after the snapshot was written is still refused by get_relay and named by verify', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  const file = path.join(corpus, 'relay-0042');
  await fs.writeFile(file, (await fs.readFile(file, 'utf8')).replace('record 42', 'record 43'));
  const store = await openStore({ corpus });
  t.after(() => store.close());
  assert.equal((await store.exists('relay-0042')).state, 'PRESENT', 'held, just not whole');
  await assert.rejects(store.read('relay-0042'), (err: { code?: string }) => err.code === 'damaged');
  const report = await verifyCorpus(corpus);
  assert.deepEqual(report.damaged.map((d) => d.id), ['relay-0042']);
});

test('removing .state costs one full scan, and the store writes a new snapshot after it', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  await fs.rm(corpusPaths(corpus).state, { recursive: true });
  let log = '';
  const store = await openStore({ corpus, log: createLogger('debug', (line) => (log += line)) });
  await store.close();
  assert.match(log, /indexed 600 records .*\(600 read\)/);
  const read = decodeSnapshot(await fs.readFile(corpusPaths(corpus).snapshot), 4);
  assert.ok('snapshot' in read);
});

function flipByte(file: Buffer, at: number): Buffer {
  const copy = Buffer.from(file);
  copy[at] = copy[at]! ^ 0xff;
  return copy;
}

test('a stdio server that is only probed (initialize, tools/list) reads nothing and writes nothing; its first call opens the store', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await fs.rm(corpusPaths(corpus).state, { recursive: true, force: true });
  const probe = await stdioClient(null, corpus);
  assert.ok((await probe.client.listTools()).tools.length > 0);
  await probe.client.close();
  await assert.rejects(fs.stat(corpusPaths(corpus).state), { code: 'ENOENT' }, 'the probe left no .state/: it did not open the store');

  const real = await stdioClient(t, corpus);
  assert.equal(textOf(await real.client.callTool({ name: 'exists', arguments: { id: 'relay-0600' } })), 'relay-0600 PRESENT');
  await real.client.close();
  const read = decodeSnapshot(await fs.readFile(corpusPaths(corpus).snapshot), 4);
  assert.ok('snapshot' in read, 'the real server left a snapshot of its scan');
});

test('idempotency keys of records read from the snapshot still answer: a retried append is replayed, not stored twice', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  const bytes = Buffer.from('@p-e/x0\nkind: note\n\nonce only\n');
  const deposit = { provenance: 'as-received' as const, depositedBy: 'mcp', depositedAt: new Date(0).toISOString(), digest: digestOf(bytes), idempotencyKey: 'k-601' };
  await fs.writeFile(path.join(corpus, 'relay-0601'), buildRecordFile(deposit, bytes));
  await leaveSnapshot(corpus);
  let log = '';
  const store = await openStore({ corpus, log: createLogger('debug', (line) => (log += line)) });
  t.after(() => store.close());
  const again = await store.append(bytes, { depositedBy: 'mcp', idempotencyKey: 'k-601' });
  assert.match(log, /snapshot, then 0 read/);
  assert.equal(again.id, 'relay-0601');
  assert.equal(again.replayed, true);
});

/** Rewrites the snapshot with `change` made to it, as someone who can write `.state/` could (it stays whole: a fresh checksum). */
async function editSnapshot(corpus: string, change: (snapshot: Snapshot) => void): Promise<void> {
  const read = decodeSnapshot(await fs.readFile(corpusPaths(corpus).snapshot), 4);
  assert.ok('snapshot' in read, JSON.stringify(read));
  change(read.snapshot);
  await fs.writeFile(corpusPaths(corpus).snapshot, encodeSnapshot(read.snapshot));
}

test('a snapshot row for a file that is not there is not held, even under a directory stamp that matches', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  await fs.rm(path.join(corpus, 'relay-0300')); // older than the newest few the spot check reads; relay-0100 cites it
  const now = await fs.stat(corpus);
  // The stamp of the directory as it is now, taken "long after" it last changed: what a loader once took as proof
  // that the snapshot's rows are the directory's entries.
  await editSnapshot(corpus, (snapshot) => {
    snapshot.stamp = { dev: now.dev, ino: now.ino, mtimeMs: now.mtimeMs, ctimeMs: now.ctimeMs, takenAt: Math.max(now.mtimeMs, now.ctimeMs) + 5000 };
  });
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  assert.equal((await store.exists('relay-0300')).state, 'KNOWN_MISSING');
  assert.deepEqual(store.heldAfter(298).slice(0, 2).map(({ meta }) => meta.id), ['relay-0299', 'relay-0301'], 'a catch-up does not deliver it');
  await assert.rejects(store.read('relay-0300'), { code: 'not_found' });
});

test('a high-water mark written into the snapshot does not end assignment: the next id follows the records and the issued log', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  await editSnapshot(corpus, (snapshot) => void (snapshot.image.highWater = 9999));
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  const stored = await store.append(Buffer.from('@p-e/x0\nkind: note\n\nafter the edit\n'), { depositedBy: 'cli/test' });
  assert.equal(stored.id, 'relay-0601');
});

test('a snapshot that says what the files do not is rewritten by the next store to open it', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  await editSnapshot(corpus, (snapshot) => void (snapshot.image.highWater = 9999));
  await fs.rm(path.join(corpus, 'relay-0300'));
  const file = await leaveSnapshot(corpus);
  const read = decodeSnapshot(file, 4);
  assert.ok('snapshot' in read);
  assert.equal(read.snapshot.image.highWater, 600);
  assert.equal(read.snapshot.image.ids.length, 599);
  assert.ok(!read.snapshot.image.ids.includes(300));
});

test('a snapshot row past the newest record on disk does not raise the high-water mark', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  // relay-0600's row renumbered relay-9999: the row names a file that is not there, the highest id in the snapshot.
  await editSnapshot(corpus, (snapshot) => void (snapshot.image.ids[snapshot.image.ids.length - 1] = 9999));
  await fs.rm(path.join(corpus, 'relay-0600'));
  let log = '';
  const store = await openStore({ corpus, watch: 'none', log: createLogger('warn', (line) => (log += line)) });
  t.after(() => store.close());
  const stored = await store.append(Buffer.from('@p-e/x0\nkind: note\n\nafter the edit\n'), { depositedBy: 'cli/test' });
  assert.equal(stored.id, 'relay-0601', 'relay-0600 was issued (the log says so): never again, and nothing past it');
  assert.equal((await store.exists('relay-9999')).state, 'UNKNOWN');
  assert.match(log, /the index snapshot names 1 record past the newest on disk \(up to relay-9999\); not held/);
});

test('an idempotency key written into the snapshot for another record does not refuse the real sender', async (t) => {
  const { corpus } = await tempStore(t);
  await conversation(corpus);
  await leaveSnapshot(corpus);
  await editSnapshot(corpus, (snapshot) => void snapshot.keys.push([5, 'mcp\nana/answer/relay-0001']));
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  const answer = Buffer.from('@p-e/x0\nkind: answer\nfrom: ana\nparent: relay-0001\n\nyes\n');
  const stored = await store.append(answer, { depositedBy: 'mcp', idempotencyKey: 'ana/answer/relay-0001' });
  assert.equal(stored.id, 'relay-0601');
  const again = await store.append(answer, { depositedBy: 'mcp', idempotencyKey: 'ana/answer/relay-0001' });
  assert.deepEqual([again.id, again.replayed], ['relay-0601', true], 'and the key is hers from now on');
});
