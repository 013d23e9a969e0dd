/**
 * A swarm's cold start reads the corpus once: of the processes that start
 * together on a corpus with no index snapshot, one builds it and the others
 * wait for it (lib/store/index/snapshot-build.ts). Never at the price of waiting on
 * a builder that is gone or stuck, and never at the price of trusting what
 * was waited for: the snapshot is checked as at any start. The servers are
 * real child processes; the lock is the real file.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../../lib/log.js';
import { buildRecordFile, digestOf } from '../../../lib/model/deposit.js';
import { idShape } from '../../../lib/model/ids.js';
import { hostIdentity } from '../../../lib/disk/host.js';
import { corpusPaths } from '../../../lib/disk/paths.js';
import { SNAPSHOT_MIN_RECORDS } from '../../../lib/store/index/snapshot-keeper.js';
import { openStore, type StoreOptions } from '../../../lib/store/store.js';
import { stdioClient, tempStore, textOf } from '../../support/helpers.js';

const shape = idShape(4);
const COUNT = SNAPSHOT_MIN_RECORDS + 100;

/** A corpus of COUNT records written straight to disk, with no .state/ at all (a fresh clone, rm -rf .state). */
async function coldCorpus(t: import('node:test').TestContext): Promise<string> {
  const { corpus } = await tempStore(t);
  for (let n = 1; n <= COUNT; n++) await writeRecord(corpus, n);
  await fs.rm(corpusPaths(corpus).state, { recursive: true, force: true });
  return corpus;
}

async function writeRecord(corpus: string, n: number): Promise<void> {
  const bytes = Buffer.from(`@p-e/x0\nkind: note\nto: agent-${n % 3}\n\nrecord ${n}`);
  const deposit = { provenance: 'as-received' as const, depositedBy: 'mcp', depositedAt: new Date(Date.UTC(2026, 0, 1) + n).toISOString(), digest: digestOf(bytes) };
  writeFileSync(path.join(corpus, shape.format(n)), buildRecordFile(deposit, bytes)); // synchronously: a thread-pool round trip each saved
}

/** Opens a store with a debug log, says what its open logged. */
async function openLogged(corpus: string, options: Partial<StoreOptions> = {}) {
  let log = '';
  const store = await openStore({ corpus, log: createLogger('debug', (line) => (log += line)), ...options });
  return { store, log: () => log };
}

/** The lock a builder on `host` (this one's by default) with `pid` would leave. */
async function leaveLock(corpus: string, pid: number, host = hostIdentity()): Promise<string> {
  const lock = corpusPaths(corpus).snapshotBuild;
  await fs.mkdir(path.dirname(lock), { recursive: true });
  await fs.writeFile(lock, `${host.host} ${host.boot} ${pid}\n`);
  return lock;
}

/** A pid that was this host's and has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

test('four servers started together on a corpus with no .state read its records once: one builds the snapshot, three load it', async (t) => {
  const corpus = await coldCorpus(t);
  const servers = await Promise.all(Array.from({ length: 4 }, () => stdioClient(t, corpus, [], { P_E_RELAY_LOG: 'debug' })));
  const states = await Promise.all(servers.map(async ({ client }) => textOf(await client.callTool({ name: 'exists', arguments: { id: shape.format(COUNT) } }))));
  assert.deepEqual(states, Array(4).fill(`${shape.format(COUNT)} PRESENT`));
  const opens = servers.map(({ stderr }) => /indexed \d+ records .*\)/.exec(stderr())?.[0] ?? stderr());
  assert.equal(opens.filter((line) => line.includes(`(${COUNT} read)`)).length, 1, opens.join('\n'));
  assert.equal(opens.filter((line) => /\(snapshot, then 0 read and 0 dropped\)/.test(line)).length, 3, opens.join('\n'));
  await assert.rejects(fs.access(corpusPaths(corpus).snapshotBuild), 'the builder removed its lock');
});

test("a dead builder's lock holds no one up: the next start takes the turn and builds the snapshot itself", async (t) => {
  const corpus = await coldCorpus(t);
  const lock = await leaveLock(corpus, await deadPid());
  const { store, log } = await openLogged(corpus);
  t.after(() => store.close());
  assert.equal((await store.exists(shape.format(COUNT))).state, 'PRESENT');
  assert.match(log(), /builder .* is gone/);
  assert.match(log(), new RegExp(`\\(${COUNT} read\\)`));
  await store.close();
  await assert.rejects(fs.access(lock));
  await fs.access(corpusPaths(corpus).snapshot);
});

test("another host's lock whose mtime stands still is stale after its time, whatever that host's clock says", async (t) => {
  const corpus = await coldCorpus(t);
  const lock = await leaveLock(corpus, 1, { host: 'elsewhere', boot: '00000000' });
  const future = new Date(Date.now() + 3_600_000); // a clock an hour ahead, or a lock touched "later"
  await fs.utimes(lock, future, future);
  const { store, log } = await openLogged(corpus, { buildWait: { staleMs: 300 } });
  t.after(() => store.close());
  assert.equal((await store.exists(shape.format(COUNT))).state, 'PRESENT');
  assert.match(log(), /builder .* is gone/);
});

test('a builder that is alive but never finishes: a waiter reads the corpus itself once its wait is over', async (t) => {
  const corpus = await coldCorpus(t);
  const lock = await leaveLock(corpus, process.pid); // alive, and touched as a live builder's is
  const beat = setInterval(() => void fs.utimes(lock, new Date(), new Date()).catch(() => {}), 50);
  t.after(() => clearInterval(beat));
  const { store, log } = await openLogged(corpus, { buildWait: { maxWaitMs: 400 } });
  t.after(() => store.close());
  assert.equal((await store.exists(shape.format(COUNT))).state, 'PRESENT');
  assert.match(log(), /waited 400 ms for another process's index snapshot .*; reading every record instead/);
  assert.match(log(), new RegExp(`\\(${COUNT} read\\)`));
});

test('a waiter checks the snapshot it waited for against the disk: a record gone since is dropped, one added since is read', async (t) => {
  const corpus = await coldCorpus(t);
  const built = await openLogged(corpus);
  await built.store.close();
  const snapshot = await fs.readFile(corpusPaths(corpus).snapshot);
  await fs.rm(corpusPaths(corpus).snapshot);
  // The test is the builder: it holds the lock while the waiter opens, and
  // changes the disk behind the snapshot it then puts in place.
  const lock = await leaveLock(corpus, process.pid);
  const beat = setInterval(() => void fs.utimes(lock, new Date(), new Date()).catch(() => {}), 50);
  t.after(() => clearInterval(beat));
  const waiter = openLogged(corpus);
  await fs.rm(path.join(corpus, shape.format(5)));
  await writeRecord(corpus, COUNT + 1);
  // Whole or not at all, as a builder writes it: the waiter may look at any moment.
  await fs.writeFile(`${corpusPaths(corpus).snapshot}.new`, snapshot);
  await fs.rename(`${corpusPaths(corpus).snapshot}.new`, corpusPaths(corpus).snapshot);
  clearInterval(beat);
  await fs.rm(lock);
  const { store, log } = await waiter;
  t.after(() => store.close());
  assert.match(log(), /\(snapshot, then 1 read and 1 dropped\)/);
  assert.equal((await store.exists(shape.format(5))).state, 'UNKNOWN');
  assert.equal((await store.exists(shape.format(COUNT + 1))).state, 'PRESENT');
});
