/**
 * `verify` on `.state/` (lib/ops/verify-state.ts; docs/security.md N9): the
 * index snapshot and the issued-id log checked against the records, on real
 * corpora through the real CLI.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { buildRecordFile, digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { decodeSnapshot, encodeSnapshot, type Snapshot } from '../../lib/store/index/index-snapshot.js';
import { openStore } from '../../lib/store/store.js';
import { record, runCli, tempStore } from '../support/helpers.js';

const shape = idShape();
const QUIET = { P_E_RELAY_LOG: 'warn' };

test('verify names a record whose file no longer says what .state/index says of it, which the store would answer from', { timeout: 60_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  for (let n = 1; n <= 600; n++) {
    const bytes = Buffer.from(record({ kind: 'note', from: `agent-${n % 4}` }, `record ${n}`));
    const deposit = { provenance: 'as-received' as const, depositedBy: 'mcp', depositedAt: new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString(), digest: digestOf(bytes) };
    writeFileSync(path.join(corpus, shape.format(n)), buildRecordFile(deposit, bytes)); // synchronously: a thread-pool round trip each saved
  }
  await (await openStore({ corpus, watch: 'none' })).close(); // a full scan of 600 records leaves a snapshot
  const clean = await runCli(['verify', '--corpus', corpus], { env: { P_E_RELAY_LOG: 'info' } });
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  assert.match(clean.stderr, /\.state\/index agrees with every record it describes \(600\)/);

  // An old record rewritten in place, whole: the snapshot's spot check reads only the newest few.
  const file = path.join(corpus, 'relay-0010');
  const old = splitRecordFile(await fs.readFile(file));
  const bytes = Buffer.from(record({ kind: 'question', from: 'agent-2' }, 'record 10'));
  await fs.writeFile(file, buildRecordFile({ ...old.deposit, digest: digestOf(bytes) }, bytes));
  const run = await runCli(['verify', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 1);
  assert.match(run.stdout, new RegExp(`^state: \\.state/index disagrees with relay-0010: digest is ${digestOf(bytes)} in the file and ${old.deposit.digest} in the snapshot; remove \\.state/index`, 'm'));
  assert.doesNotMatch(run.stdout, /disagrees with relay-00(0[1-9]|[1-9][1-9])/);
});

test('verify names the issued ids whose records are gone, and an issued-log line the store ignores', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  for (let i = 0; i < 5; i++) await store.append(Buffer.from(record({ kind: 'note' })), { depositedBy: 'cli/test' });
  await store.close();
  await fs.rm(path.join(corpus, 'relay-0003'));
  await fs.appendFile(corpusPaths(corpus).issued, 'relay-9999\n');
  const run = await runCli(['verify', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 0, 'what .state/issued says is reported; the records themselves are whole');
  assert.match(run.stdout, /^state: \.state\/issued says relay-0003 was issued, and its record is not here/m);
  assert.match(run.stdout, /^state: \.state\/issued's line relay-9999 is ignored by the store/m);
  assert.doesNotMatch(run.stdout, /relay-000[1245] was issued/);
});

test('a mirror has no .state/index or .state/issued of its own: verify says nothing about them', async (t) => {
  const { corpus } = await tempStore(t);
  const bytes = Buffer.from(record({ kind: 'note' }));
  await fs.writeFile(path.join(corpus, 'relay-0001'), buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp', depositedAt: new Date().toISOString(), digest: digestOf(bytes) }, bytes));
  const run = await runCli(['verify', '--corpus', corpus], { env: { P_E_RELAY_LOG: 'info' } });
  assert.equal(run.code, 0);
  assert.doesNotMatch(run.stdout + run.stderr, /\.state\//);
});

test("verify names an issued line whose claims are not its record's, which other servers held the record by", async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  for (const to of ['ana', 'bo', 'cy']) await store.append(Buffer.from(record({ kind: 'note', to }, `for ${to}`)), { depositedBy: 'mcp', idempotencyKey: `k-${to}` });
  await store.close();
  const clean = await runCli(['verify', '--corpus', corpus], { env: { P_E_RELAY_LOG: 'info' } });
  assert.match(clean.stderr, /\.state\/issued agrees with the records/, clean.stdout + clean.stderr);
  const log = corpusPaths(corpus).issued;
  await fs.writeFile(log, (await fs.readFile(log, 'latin1')).replace('"t":"bo"', '"t":"cy"'));
  const run = await runCli(['verify', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 0, 'the records themselves are whole');
  assert.match(run.stdout, /^state: \.state\/issued's line for relay-0002 claims other than the record does/m);
  assert.doesNotMatch(run.stdout, /line for relay-000[13]/);
});

/** 600 records (enough for a store to leave a snapshot) and the snapshot a store left of them. */
async function snapshotted(t: import('node:test').TestContext): Promise<string> {
  const { corpus } = await tempStore(t);
  for (let n = 1; n <= 600; n++) {
    const bytes = Buffer.from(record({ kind: 'note', from: `agent-${n % 4}` }, `record ${n}`));
    const deposit = { provenance: 'as-received' as const, depositedBy: 'mcp', depositedAt: new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString(), digest: digestOf(bytes) };
    await fs.writeFile(path.join(corpus, shape.format(n)), buildRecordFile(deposit, bytes));
  }
  await (await openStore({ corpus, watch: 'none' })).close();
  return corpus;
}

/** Rewrites `.state/index` with `change` made to it, whole (a fresh checksum), as someone who can write `.state/` could. */
async function editSnapshot(corpus: string, change: (snapshot: Snapshot) => void): Promise<void> {
  const read = decodeSnapshot(await fs.readFile(corpusPaths(corpus).snapshot), 4);
  assert.ok('snapshot' in read);
  change(read.snapshot);
  await fs.writeFile(corpusPaths(corpus).snapshot, encodeSnapshot(read.snapshot));
}

test('verify names a snapshot row whose file is not there, and exits 1', async (t) => {
  const corpus = await snapshotted(t);
  await fs.rm(path.join(corpus, 'relay-0300'));
  const run = await runCli(['verify', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 1, run.stdout);
  assert.match(run.stdout, /^state: \.state\/index disagrees with relay-0300: the snapshot holds a row for it, and there is no such file; remove \.state\/index/m);
});

test('verify names an idempotency key the snapshot gives a record whose file does not carry it, and exits 1', async (t) => {
  const corpus = await snapshotted(t);
  await editSnapshot(corpus, (snapshot) => void snapshot.keys.push([5, 'mcp\nana/answer/relay-0001']));
  const run = await runCli(['verify', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 1, run.stdout);
  assert.match(run.stdout, /^state: \.state\/index disagrees with relay-0005: the snapshot says it was stored under the idempotency key "ana\/answer\/relay-0001" of "mcp", and its file carries no key/m);
});

test('verify names a snapshot high-water mark past the records and the issued log, and exits 1', async (t) => {
  const corpus = await snapshotted(t);
  await editSnapshot(corpus, (snapshot) => void (snapshot.image.highWater = 9999));
  const run = await runCli(['verify', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 1, run.stdout);
  assert.match(run.stdout, /^state: \.state\/index disagrees with relay-9999: the snapshot's high-water mark is relay-9999, and neither the records nor \.state\/issued say an id past relay-0600 was issued/m);
});
