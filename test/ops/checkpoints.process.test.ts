/**
 * Checkpoint records (lib/model/checkpoint.ts, lib/store/checkpoint-writer.ts)
 * and what `verify` proves with them on a copy (lib/ops/verify-checkpoints.ts):
 * real corpora on disk, the real CLI, and a real rsync mirror filled by
 * `p-e-relay mirror` for what mirroring does to a copy.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { addKey } from '../../lib/auth/keys.js';
import { buildRecordFile, digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { buildCheckpoint, chainOf, GENESIS_CHAIN, parseCheckpoint, type Checkpoint } from '../../lib/model/checkpoint.js';
import { idShape } from '../../lib/model/ids.js';
import type { RecordMeta } from '../../lib/model/record-index.js';
import { CheckpointSchedule, CheckpointWriter } from '../../lib/store/checkpoint-writer.js';
import { openStore, type RelayStore } from '../../lib/store/store.js';
import { silentLogger } from '../../lib/log.js';
import { record, runCli, tempStore } from '../support/helpers.js';
import { keyFile, sign } from '../support/http-helpers.js';
import { spawnHub } from '../support/hub-process.js';
import { needs } from '../support/needs.js';

const shape = idShape();
const QUIET = { P_E_RELAY_LOG: 'warn' };
const unsigned = async () => null;

async function primary(t: TestContext): Promise<{ dir: string; corpus: string; keys: string; store: RelayStore }> {
  const made = await tempStore(t);
  const store = await openStore({ corpus: made.corpus, watch: 'none' });
  t.after(() => store.close());
  return { ...made, store };
}

async function append(store: RelayStore, body = 'hello', headers: Record<string, string> = { kind: 'note', from: 'scout-7' }): Promise<string> {
  return (await store.append(Buffer.from(record(headers, body)), { depositedBy: 'cli/test' })).id;
}

async function checkpointAt(corpus: string, id: string): Promise<Checkpoint> {
  const parsed = parseCheckpoint(splitRecordFile(await fs.readFile(path.join(corpus, id))).record, shape);
  assert.ok(!('invalid' in parsed), JSON.stringify(parsed));
  return parsed;
}

function verify(corpus: string, extra: string[] = []) {
  return runCli(['verify', '--corpus', corpus, ...extra], { env: QUIET });
}

function mirror(source: string, dest: string) {
  return runCli(['mirror', '--corpus', dest, source], { env: QUIET });
}

test('a checkpoint lists every held record since the last one with its digest, chains it, and is an ordinary record of the hub', async (t) => {
  const { corpus, store } = await primary(t);
  for (const body of ['a', 'b', 'c']) await append(store, body);
  const writer = new CheckpointWriter(store, unsigned, silentLogger);
  assert.deepEqual(await writer.writeDue(), ['relay-0004']);
  const c = await checkpointAt(corpus, 'relay-0004');
  assert.deepEqual(c.previous, { id: 0, chain: `sha256:${'0'.repeat(64)}` });
  assert.deepEqual([c.first, c.last], [1, 3]);
  const digests = store.heldAfter(0).slice(0, 3).map(({ n, meta }) => ({ n, digest: meta.digest }));
  assert.deepEqual(c.listed, digests.map(({ n, digest }) => ({ n, short: digest.slice(7, 23) })));
  assert.equal(c.chain, chainOf(c.previous.chain, digests, shape));
  const held = store.heldAfter(3)[0]!.meta;
  assert.deepEqual([held.kind, held.from, held.depositedBy], ['checkpoint', 'hub', 'hub']);

  assert.deepEqual(await writer.writeDue(), [], 'nothing but the checkpoint itself landed since: no checkpoint');
  await append(store, 'd');
  assert.deepEqual(await writer.writeDue(), ['relay-0006']);
  const next = await checkpointAt(corpus, 'relay-0006');
  assert.deepEqual(next.previous, { id: 4, chain: c.chain });
  assert.deepEqual(next.listed.map((e) => e.n), [4, 5], 'the previous checkpoint is covered like any record');
});

test('two processes writing the checkpoint due at once store one: the second is refused by its idempotency key', async (t) => {
  const { corpus, store } = await primary(t);
  for (const body of ['a', 'b', 'c']) await append(store, body);
  await store.close();
  const runs = await Promise.all([runCli(['checkpoint', '--corpus', corpus], { env: QUIET }), runCli(['checkpoint', '--corpus', corpus], { env: QUIET })]);
  for (const run of runs) assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(runs.map((r) => r.stdout).sort(), ['', 'relay-0004\n']);
  const names = (await fs.readdir(corpus)).filter((name) => name.startsWith('relay-')).sort();
  assert.deepEqual(names, ['relay-0001', 'relay-0002', 'relay-0003', 'relay-0004']);
});

test('a record of kind checkpoint that an agent sent is no checkpoint: the next one does not follow it', async (t) => {
  const { corpus, store } = await primary(t);
  await append(store);
  await append(store, 'not really', { kind: 'checkpoint', from: 'scout-7' });
  assert.deepEqual(await new CheckpointWriter(store, unsigned, silentLogger).writeDue(), ['relay-0003']);
  assert.equal((await checkpointAt(corpus, 'relay-0003')).previous.id, 0);
});

test('64 agents\' records of kind checkpoint after the hub\'s do not stop checkpoints: the next follows the hub\'s', async (t) => {
  const { corpus, store } = await primary(t);
  await append(store);
  assert.deepEqual(await new CheckpointWriter(store, unsigned, silentLogger).writeDue(), ['relay-0002']);
  for (let i = 0; i < 64; i++) await append(store, `not really ${i}`, { kind: 'checkpoint', from: 'scout-7' });
  await store.close();
  const run = await runCli(['checkpoint', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, 'relay-0067\n');
  const c = await checkpointAt(corpus, 'relay-0067');
  assert.equal(c.previous.id, 2);
  assert.deepEqual([c.first, c.last], [2, 66]);
});

test('a writer that missed the newest checkpoint follows the one holding its key, and goes on after it', async (t) => {
  const { corpus, store } = await primary(t);
  for (const body of ['a', 'b']) await append(store, body);
  assert.deepEqual(await new CheckpointWriter(store, unsigned, silentLogger).writeDue(), ['relay-0003']);
  await append(store, 'c');
  class Stale extends CheckpointWriter {
    private looked = false;
    override async latest() {
      if (this.looked) return super.latest();
      this.looked = true;
      return { link: { id: 0, chain: `sha256:${'0'.repeat(64)}` }, last: 0 }; // as if relay-0003 were not there
    }
  }
  assert.deepEqual(await new Stale(store, unsigned, silentLogger).writeDue(), ['relay-0005']);
  const c = await checkpointAt(corpus, 'relay-0005');
  assert.deepEqual([c.previous.id, c.first, c.last], [3, 3, 4]);
});

test('checkpoint exits 1 and says why when the place of the next checkpoint is taken by a record no checkpoint can follow', async (t) => {
  const { corpus, store } = await primary(t);
  await append(store);
  await store.close();
  const bytes = Buffer.from(record({ kind: 'note', from: 'hub' }, 'squatting'));
  const deposit = { provenance: 'as-received' as const, depositedBy: 'hub', depositedAt: new Date().toISOString(), digest: digestOf(bytes), idempotencyKey: 'checkpoint-after-relay-0000' };
  await fs.writeFile(path.join(corpus, 'relay-0002'), buildRecordFile(deposit, bytes));
  const run = await runCli(['checkpoint', '--corpus', corpus], { env: QUIET });
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /no checkpoint written: the checkpoint key checkpoint-after-relay-0000 is taken by relay-0002, which no checkpoint can follow/);
});

test('a hub writes a checkpoint after every N records it hears (serve --checkpoint-every N)', async (t) => {
  const { corpus, store } = await primary(t);
  const schedule = new CheckpointSchedule(store, { every: 3, seconds: 3600 }, unsigned, silentLogger).start();
  t.after(() => schedule.close());
  const written = new Promise<string>((resolve) => {
    const heard = (meta: RecordMeta) => meta.kind === 'checkpoint' && (store.off('record', heard), resolve(meta.id));
    store.on('record', heard);
  });
  for (const body of ['a', 'b', 'c']) await append(store, body);
  assert.equal(await written, 'relay-0004');
  assert.deepEqual((await checkpointAt(corpus, 'relay-0004')).listed.map((e) => e.n), [1, 2, 3]);
});

test('serve --http writes a checkpoint after every N records it stores, signed with keys/hub.key', async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'hub');
  await addKey(keys, 'scout-7');
  const key = Buffer.from((await fs.readFile(keyFile(keys, 'scout-7'), 'utf8')).trim());
  const hub = await spawnHub({ corpus, keys, args: ['--checkpoint-every', '2'], until: 'scanned', cleanup: t });
  const watcher = await openStore({ corpus });
  t.after(() => watcher.close());
  const landed = watcher.wait({ after: 'relay-0000', filter: { kind: new Set(['checkpoint']) }, timeoutMs: 20_000 });
  for (const body of ['a', 'b']) {
    const bytes = record({ kind: 'note', from: 'scout-7' }, body);
    const response = await fetch(`${hub.url}/relays`, { method: 'POST', body: bytes, headers: { authorization: sign('scout-7', key, 'POST', bytes) } });
    assert.equal(response.status, 201, await response.text());
  }
  assert.deepEqual((await landed).appeared.map((a) => [a.id, a.from, a.depositedBy]), [['relay-0003', 'hub', 'hub']]);
  await hub.stop();
  assert.equal((await checkpointAt(corpus, 'relay-0003')).signature?.key, 'hub');
  const run = await verify(corpus, ['--keys', keys]);
  assert.match(run.stdout, /^complete and identical up to relay-0002 \(checkpoint relay-0003; 1 checkpoint, 1 signature checked with hub's key\)$/m);
});

test('verify on the primary: complete and identical up to the newest checkpoint, and how many records lie after it', async (t) => {
  const { corpus, store } = await primary(t);
  for (const body of ['a', 'b', 'c']) await append(store, body);
  await new CheckpointWriter(store, unsigned, silentLogger).writeDue();
  await append(store, 'd');
  const run = await verify(corpus);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^complete and identical up to relay-0003 \(checkpoint relay-0004; 1 checkpoint, 1 unsigned\); 1 record after it not covered by a checkpoint yet$/m);
  const json = await verify(corpus, ['--json']);
  assert.equal(json.code, 0);
  const report = JSON.parse(json.stdout) as { checked: number; checkpoints: { frontier: string; newest: string; uncovered: number } };
  assert.deepEqual([report.checked, report.checkpoints.frontier, report.checkpoints.newest, report.checkpoints.uncovered], [5, 'relay-0003', 'relay-0004', 1]);
});

test('a corpus without checkpoints says completeness cannot be proven, and passes as before', async (t) => {
  const { corpus, store } = await primary(t);
  await append(store);
  const run = await verify(corpus);
  assert.equal(run.code, 0);
  assert.match(run.stdout, /^no checkpoints here: completeness cannot be proven/m);
});

test('signatures: checked with the hub\'s key where the verifier holds it; another key names the checkpoint; without one, not checked', async (t) => {
  const { dir, corpus, keys, store } = await primary(t);
  await addKey(keys, 'hub');
  await append(store);
  await store.close();
  assert.equal((await runCli(['checkpoint', '--corpus', corpus, '--keys', keys], { env: QUIET })).stdout, 'relay-0002\n');
  assert.match((await checkpointAt(corpus, 'relay-0002')).signature?.key ?? '', /^hub$/);

  const held = await verify(corpus, ['--keys', keys]);
  assert.equal(held.code, 0, held.stdout);
  assert.match(held.stdout, /^complete and identical up to relay-0001 \(checkpoint relay-0002; 1 checkpoint, 1 signature checked with hub's key\)$/m);

  const none = await verify(corpus, ['--keys', path.join(dir, 'no-keys')]);
  assert.equal(none.code, 0, none.stdout);
  assert.match(none.stdout, /1 signed by hub not checked: no usable keys\/hub\.key here/);

  const other = path.join(dir, 'other-keys');
  await addKey(other, 'hub');
  const wrong = await verify(corpus, ['--keys', other]);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stdout, /^broken checkpoint relay-0002: its signature is not hub's key's/m);
  assert.match(wrong.stdout, /^not proven complete: 1 broken checkpoint; nothing before the first problem is proven$/m);
});

/**
 * A primary whose two checkpoints (relay-0002, relay-0004) are signed with keys/hub.key; then, on the same copy,
 * relay-0003 rewritten and relay-0004 rewritten to list it, signed with `signer` (a name and its key file, or null).
 */
async function resigned(t: TestContext, signer: string | null) {
  const p = await primary(t);
  await addKey(p.keys, 'hub');
  await addKey(p.keys, 'scout-7');
  await append(p.store, 'a');
  await p.store.close();
  const checkpoint = () => runCli(['checkpoint', '--corpus', p.corpus, '--keys', p.keys], { env: QUIET });
  assert.equal((await checkpoint()).stdout, 'relay-0002\n');
  const again = await openStore({ corpus: p.corpus, watch: 'none' });
  await append(again, 'b');
  await again.close();
  assert.equal((await checkpoint()).stdout, 'relay-0004\n');
  const genuine = await verify(p.corpus, ['--keys', p.keys]);
  assert.equal(genuine.code, 0, genuine.stdout);

  const rewrite = async (id: string, bytes: Buffer) => {
    const { deposit } = splitRecordFile(await fs.readFile(path.join(p.corpus, id)));
    await fs.writeFile(path.join(p.corpus, id), buildRecordFile({ ...deposit, digest: digestOf(bytes) }, bytes));
    return digestOf(bytes);
  };
  const digest = await rewrite('relay-0003', Buffer.from(record({ kind: 'note', from: 'scout-7' }, 'b, rewritten')));
  const previous = { id: 2, chain: (await checkpointAt(p.corpus, 'relay-0002')).chain };
  const key = signer === null ? null : { name: signer, key: Buffer.from((await fs.readFile(keyFile(p.keys, signer), 'utf8')).trim()) };
  await rewrite('relay-0004', buildCheckpoint({ previous, entries: [{ n: 3, digest }], signer: key }, shape));
  return { ...p, genuine: genuine.stdout };
}

test('verify checks checkpoint signatures with the hub\'s key only: a copy rewritten and re-signed with an agent\'s key is broken', async (t) => {
  const { corpus, keys, genuine } = await resigned(t, 'scout-7');
  const run = await verify(corpus, ['--keys', keys]);
  assert.equal(run.code, 1, run.stdout);
  assert.match(genuine, /^complete and identical up to relay-0003 \(checkpoint relay-0004; 2 checkpoints, 2 signatures checked with hub's key\)$/m);
  assert.match(run.stdout, /^broken checkpoint relay-0004: it is signed by scout-7, not by the checkpoint key hub, and relay-0002 before it was signed by hub/m);
  assert.doesNotMatch(run.stdout, /^complete and identical/m);
  assert.match(run.stdout, /^not proven complete: 1 broken checkpoint; consistent up to relay-0001 \(checkpoint relay-0002; 2 checkpoints, 1 signature checked with hub's key, 1 signed by scout-7, not the checkpoint key hub: not checked\)$/m);
});

test('verify fails a checkpoint left unsigned after the hub signed the ones before it', async (t) => {
  const { corpus, keys } = await resigned(t, null);
  const run = await verify(corpus, ['--keys', keys]);
  assert.equal(run.code, 1, run.stdout);
  assert.match(run.stdout, /^broken checkpoint relay-0004: it is unsigned, and relay-0002 before it was signed by hub/m);
});

test('verify --checkpoint-key NAME checks signatures with keys/NAME.key, and the summary names it', async (t) => {
  const { corpus, keys, store } = await primary(t);
  await addKey(keys, 'hub');
  await addKey(keys, 'relay-hub');
  await append(store);
  await store.close();
  assert.equal((await runCli(['checkpoint', '--corpus', corpus, '--keys', keys, '--checkpoint-key', 'relay-hub'], { env: QUIET })).stdout, 'relay-0002\n');
  const named = await verify(corpus, ['--keys', keys, '--checkpoint-key', 'relay-hub']);
  assert.equal(named.code, 0, named.stdout);
  assert.match(named.stdout, /^complete and identical up to relay-0001 \(checkpoint relay-0002; 1 checkpoint, 1 signature checked with relay-hub's key\)$/m);
  const byDefault = await verify(corpus, ['--keys', keys]);
  assert.equal(byDefault.code, 1, 'keys/hub.key is at hand and signed nothing: nothing is proven');
  assert.match(byDefault.stdout, /^consistent, not proven up to relay-0001 \(1 checkpoint, 1 signed by relay-hub, not the checkpoint key hub: not checked\): checkpoint relay-0002 is not signed with hub's key/m);
});

/**
 * A primary whose one checkpoint (relay-0002) is signed with keys/hub.key; then, on the same copy, every record
 * rewritten from the first on, relay-0002 too, as a first checkpoint signed with `signer` (an agent's key) or none.
 */
async function rewrittenFromFirst(t: TestContext, signer: string | null) {
  const p = await primary(t);
  await addKey(p.keys, 'hub');
  await addKey(p.keys, 'scout-7');
  await append(p.store, 'a');
  await p.store.close();
  assert.equal((await runCli(['checkpoint', '--corpus', p.corpus, '--keys', p.keys], { env: QUIET })).stdout, 'relay-0002\n');
  const rewrite = async (id: string, bytes: Buffer) => {
    const { deposit } = splitRecordFile(await fs.readFile(path.join(p.corpus, id)));
    await fs.writeFile(path.join(p.corpus, id), buildRecordFile({ ...deposit, digest: digestOf(bytes) }, bytes));
    return digestOf(bytes);
  };
  const digest = await rewrite('relay-0001', Buffer.from(record({ kind: 'note', from: 'scout-7' }, 'a, rewritten')));
  const key = signer === null ? null : { name: signer, key: Buffer.from((await fs.readFile(keyFile(p.keys, signer), 'utf8')).trim()) };
  await rewrite('relay-0002', buildCheckpoint({ previous: { id: 0, chain: GENESIS_CHAIN }, entries: [{ n: 1, digest }], signer: key }, shape));
  await fs.rm(path.join(p.corpus, '.state'), { recursive: true }); // a copy's own state, as rsync leaves it
  return p;
}

for (const signer of ['scout-7', null]) {
  const how = signer === null ? 'left unsigned' : `re-signed with ${signer}'s key`;
  test(`a copy rewritten from its first checkpoint on, ${how}: consistent, not proven, exit 1, with the hub's key at hand or named`, async (t) => {
    const { dir, corpus, keys } = await rewrittenFromFirst(t, signer);
    const held = await verify(corpus, ['--keys', keys]);
    assert.equal(held.code, 1, held.stdout);
    assert.doesNotMatch(held.stdout, /complete and identical/);
    assert.match(held.stdout, /^consistent, not proven up to relay-0001 \(1 checkpoint, .*\): checkpoint relay-0002 is not signed with hub's key/m);
    // A host that holds agents' keys and not the hub's, with the key named: nothing can prove it.
    const agentsOnly = path.join(dir, 'agents-keys');
    await addKey(agentsOnly, 'scout-7');
    const named = await verify(corpus, ['--keys', agentsOnly, '--checkpoint-key', 'hub']);
    assert.equal(named.code, 1, named.stdout);
    assert.match(named.stdout, /^consistent, not proven up to relay-0001/m);
    const json = JSON.parse((await verify(corpus, ['--keys', keys, '--json'])).stdout) as { checkpoints: { frontier: string | null; unproven: unknown } };
    assert.deepEqual([json.checkpoints.frontier, json.checkpoints.unproven], [null, { to: 'relay-0001', checkpoint: 'relay-0002', count: 1 }]);
  });
}

test('a checkpoint signed with the hub\'s key proves the unsigned ones before it: their chains are in its own', async (t) => {
  const { corpus, keys, store } = await primary(t);
  await append(store, 'a');
  await new CheckpointWriter(store, unsigned, silentLogger).writeDue();
  await append(store, 'b');
  await store.close();
  await addKey(keys, 'hub');
  assert.equal((await runCli(['checkpoint', '--corpus', corpus, '--keys', keys], { env: QUIET })).stdout, 'relay-0004\n');
  const run = await verify(corpus, ['--keys', keys]);
  assert.equal(run.code, 0, run.stdout);
  assert.match(run.stdout, /^complete and identical up to relay-0003 \(checkpoint relay-0004; 2 checkpoints, 1 signature checked with hub's key, 1 unsigned\)$/m);
});

/** A primary of five records and a checkpoint (relay-0006), mirrored with the real rsync. */
async function mirrored(t: TestContext) {
  const p = await primary(t);
  for (const body of ['a', 'b', 'c', 'd', 'e']) await append(p.store, body);
  await new CheckpointWriter(p.store, unsigned, silentLogger).writeDue();
  const dest = path.join(p.dir, 'mirror');
  const run = await mirror(p.corpus, dest);
  assert.equal(run.code, 0, run.stderr);
  return { ...p, dest };
}

test('a mirror holding every record: complete and identical up to the checkpoint', needs('rsync'), async (t) => {
  const { dest } = await mirrored(t);
  const run = await verify(dest);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^complete and identical up to relay-0005 \(checkpoint relay-0006; 1 checkpoint, 1 unsigned\)$/m);
});

test('a mirror missing one record: verify names it, and which checkpoint lists it', needs('rsync'), async (t) => {
  const { corpus, dest } = await mirrored(t);
  await fs.rm(path.join(dest, 'relay-0003'));
  const digest = splitRecordFile(await fs.readFile(path.join(corpus, 'relay-0003'))).deposit.digest;
  const run = await verify(dest);
  assert.equal(run.code, 1);
  assert.match(run.stdout, new RegExp(`^missing relay-0003: checkpoint relay-0006 lists it \\(${digest.slice(0, 23)}…\\) and this copy does not hold it$`, 'm'));
  assert.doesNotMatch(run.stdout, /^(missing|altered) relay-000[12456]/m);
  assert.match(run.stdout, /^not proven complete: 1 missing; nothing before the first problem is proven$/m);
});

test('a mirror holding an altered record (whole, with a digest of its own): verify names it', needs('rsync'), async (t) => {
  const { corpus, dest } = await mirrored(t);
  const original = splitRecordFile(await fs.readFile(path.join(corpus, 'relay-0002')));
  const bytes = Buffer.from(record({ kind: 'note', from: 'scout-7' }, 'b, rewritten'));
  await fs.writeFile(path.join(dest, 'relay-0002'), buildRecordFile({ ...original.deposit, digest: digestOf(bytes) }, bytes));
  const run = await verify(dest);
  assert.equal(run.code, 1);
  assert.match(run.stdout, /^6 records checked, 0 damaged/m, 'the file is whole: only the checkpoint knows it is not the hub\'s');
  assert.match(run.stdout, new RegExp(`^altered relay-0002: checkpoint relay-0006 lists ${original.deposit.digest.slice(0, 23)}… and this copy holds ${digestOf(bytes)}$`, 'm'));
  assert.match(run.stdout, /^not proven complete: 1 altered;/m);
});

test('a mirror fed by a primary whose history was rewritten: verify names the fork', needs('rsync'), async (t) => {
  const p = await primary(t);
  const writer = () => new CheckpointWriter(p.store, unsigned, silentLogger);
  for (const body of ['a', 'b', 'c']) await append(p.store, body);
  await writer().writeDue(); // relay-0004
  for (const body of ['d', 'e']) await append(p.store, body);
  await writer().writeDue(); // relay-0007
  const dest = path.join(p.dir, 'mirror');
  assert.equal((await mirror(p.corpus, dest)).code, 0);
  const before = await checkpointAt(dest, 'relay-0007');

  // The primary is restored from a backup taken at relay-0004 (records and .state alike) and goes on.
  await p.store.close();
  for (const id of ['relay-0005', 'relay-0006', 'relay-0007']) await fs.rm(path.join(p.corpus, id));
  await fs.rm(path.join(p.corpus, '.state'), { recursive: true });
  const restored = await openStore({ corpus: p.corpus, watch: 'none' });
  t.after(() => restored.close());
  for (const body of ['d2', 'e2']) await append(restored, body);
  assert.deepEqual(await new CheckpointWriter(restored, unsigned, silentLogger).writeDue(), ['relay-0007']);
  const rewritten = await checkpointAt(p.corpus, 'relay-0007');
  await append(restored, 'f');
  assert.deepEqual(await new CheckpointWriter(restored, unsigned, silentLogger).writeDue(), ['relay-0009']);
  assert.equal((await verify(p.corpus)).code, 0, 'the rewritten primary is consistent with itself');

  const run = await mirror(p.corpus, dest);
  assert.equal(run.stdout, 'arrived (2): relay-0008 relay-0009\n');
  const check = await verify(dest);
  assert.equal(check.code, 1);
  assert.match(check.stdout, new RegExp(`^forked at relay-0007: checkpoint relay-0009 follows a relay-0007 whose chain is ${rewritten.chain}, but the relay-0007 held here has chain ${before.chain}`, 'm'));
  // relay-0009 lists the hub's relay-0007, whose digest differs from the one held here: that is the fork, named once.
  assert.doesNotMatch(check.stdout, /^(altered|missing|broken)/m, check.stdout);
  assert.match(check.stdout, /^not proven complete: 1 fork; consistent up to relay-0006 \(checkpoint relay-0007; 3 checkpoints, 3 unsigned\)$/m);
});

test('a checkpoint rewritten on a copy, whole but with another chain: verify names it broken, not its records', needs('rsync'), async (t) => {
  const { dest } = await mirrored(t);
  const file = path.join(dest, 'relay-0006');
  const { deposit, record: bytes } = splitRecordFile(await fs.readFile(file));
  const forged = Buffer.from(bytes.toString('utf8').replace(/^chain: sha256:[0-9a-f]{64}$/m, `chain: sha256:${'1'.repeat(64)}`));
  await fs.writeFile(file, buildRecordFile({ ...deposit, digest: digestOf(forged) }, forged));
  const run = await verify(dest);
  assert.equal(run.code, 1);
  assert.match(run.stdout, /^broken checkpoint relay-0006: its chain sha256:1{64} is not what the records it lists hash to/m);
  assert.doesNotMatch(run.stdout, /^(missing|altered|forked)/m);
});
