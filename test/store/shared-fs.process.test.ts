/**
 * A corpus shared by several hosts, without the hosts: the lies network
 * filesystems tell, told by an LD_PRELOAD shim (test/fixtures/fs-lies.c,
 * built here with the machine's cc) into real server processes on a local
 * corpus; temp files named by another host; a stale listing.
 *
 * The real thing (two hosts on one sshfs mount) is test/system/beds/multi-host.ts,
 * behind P_E_RELAY_MULTIHOST=1.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { silentLogger, type Logger } from '../../lib/log.js';
import { buildRecordFile, digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { RecordIndex } from '../../lib/model/record-index.js';
import { CorpusIndexer } from '../../lib/store/index/corpus-indexer.js';
import { hostIdentity } from '../../lib/disk/host.js';
import { corpusPaths, tempName } from '../../lib/disk/paths.js';
import { openStore } from '../../lib/store/store.js';
import { ROOT, record, runCli, stdioClient, tempDir, tempStore, textOf } from '../support/helpers.js';
import { shim } from '../support/fs-lies.js';
import { eventually } from '../support/poll.js';

const shape = idShape();

function lyingEnv(so: string, corpus: string, lies: string, mode: string, extra: Record<string, string> = {}): Record<string, string> {
  // The local disk now lies like a network filesystem, so the store is told to treat it as one.
  return { LD_PRELOAD: so, FS_LIES: mode, FS_LIES_DIR: corpus, FS_LIES_LOG: lies, FS_LIES_EVERY: '3', P_E_RELAY_SHARED_FS: '1', ...extra };
}

/** Another host's record, which the shim puts at every 4th target just before our link(). */
const FOREIGN = record({ kind: 'load', from: 'other-host' }, 'won the race\n');

/** The body each lane sends is unique, so a body stored twice is a duplicate. */
const body = (lane: number, i: number) => record({ kind: 'load', from: `lane-${lane}` }, `lane ${lane} append ${i}\n`);

/** Every record file's body → the ids it is stored under. */
async function storedBodies(corpus: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const name of (await readdir(corpus)).filter((n) => shape.parseRecordId(n) !== null)) {
    const text = splitRecordFile(await readFile(path.join(corpus, name))).record.toString('utf8');
    out.set(text, [...(out.get(text) ?? []), name]);
  }
  return out;
}

/**
 * Two stdio servers under the shim, `perLane` appends each, all at once, and
 * before every 4th link another host's record takes the name; checks
 * exactly-once and returns the lies told.
 */
async function appendThroughLies(t: TestContext, mode: string, perLane: number): Promise<string[] | null> {
  const so = await shim(t);
  if (so === null) return null;
  const { corpus, dir } = await tempStore(t);
  const lies = path.join(dir, 'lies.log');
  const foreign = path.join(dir, 'foreign-record');
  await writeFile(foreign, buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp', depositedAt: new Date().toISOString(), digest: digestOf(Buffer.from(FOREIGN)) }, Buffer.from(FOREIGN)));
  const env = lyingEnv(so, corpus, lies, mode, { FS_LIES_RACE_EVERY: '4', FS_LIES_FOREIGN: foreign });
  const clients = await Promise.all([0, 1].map(() => stdioClient(t, corpus, [], env).then((c) => c.client)));
  const sent = clients.flatMap((client, lane) =>
    Array.from({ length: perLane }, async (_, i) => {
      const bytes = body(lane, i);
      const result = (await client.callTool({ name: 'append_relay', arguments: { bytes } })) as CallToolResult;
      assert.ok(!result.isError, `lane ${lane} append ${i} was refused: ${textOf(result)}`);
      return { bytes, id: (result.structuredContent as { id: string }).id };
    }),
  );
  const answered = await Promise.all(sent);
  const stored = await storedBodies(corpus);
  for (const { bytes, id } of answered) assert.deepEqual(stored.get(bytes), [id], `${JSON.stringify(bytes)} is stored once, under the id its answer named`);
  const raced = stored.get(FOREIGN) ?? [];
  assert.ok(raced.length > 0, 'the other host won some names');
  const ids = [...stored.values()].flat().sort();
  assert.deepEqual(ids, Array.from({ length: 2 * perLane + raced.length }, (_, i) => shape.format(i + 1)), 'ids are contiguous from relay-0001: no id was spent on a second copy');
  assert.deepEqual(await readdir(corpusPaths(corpus).tmp), [], 'no temp file is left');
  return (await readFile(lies, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

test('a link() whose reply is lost (EEXIST for our own success, as over NFS) stores every body once, under the id answered', { timeout: 60_000 }, async (t) => {
  const lies = await appendThroughLies(t, 'lost-link', 15);
  if (lies === null) return;
  assert.ok(lies.some((l) => l.startsWith('lost-link ')), `the shim reported EEXIST after a real link (lies told: ${lies.length})`);
});

test('EPERM for EEXIST (as sshfs answers a taken name) is a taken id, not a refusal: every body once, under one id', { timeout: 60_000 }, async (t) => {
  const lies = await appendThroughLies(t, 'eperm', 20);
  if (lies === null) return;
  assert.ok(lies.some((l) => l.startsWith('eperm-link ')), `a name taken first was answered EPERM (lies told: ${lies.length})`);
});

test('the replay guard takes EPERM from its exclusive create as "seen before", not as a failure', { timeout: 30_000 }, async (t) => {
  const so = await shim(t);
  if (so === null) return;
  const { dir, corpus } = await tempStore(t); // init starts the guard's memory, so a fresh signature is not guard_reset
  const guardDir = corpusPaths(corpus).replay;
  const lies = path.join(dir, 'lies.log');
  const script = `
    import { ReplayGuard } from ${JSON.stringify(path.join(ROOT, 'lib/auth/replay-guard.ts'))};
    const guard = new ReplayGuard(${JSON.stringify(guardDir)});
    const ts = String(Math.floor(Date.now() / 1000));
    const first = await guard.accept('sig-1', ts);
    const again = await guard.accept('sig-1', ts);
    process.stdout.write(JSON.stringify([first, again]));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, ...lyingEnv(so, corpus, lies, 'eperm') } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, err);
  assert.deepEqual(JSON.parse(out), [true, false]);
  assert.match(await readFile(lies, 'utf8'), /^eperm-open /m, 'the second create was told EPERM');
});

test('a file lock takes EPERM from its exclusive create (as sshfs answers a held lock) as held, and waits for it', { timeout: 30_000 }, async (t) => {
  const so = await shim(t);
  if (so === null) return;
  const { dir, corpus } = await tempStore(t);
  const lies = path.join(dir, 'lies.log');
  // The first holder keeps the claims' lock while a second asks for it: the second's create is told EPERM.
  const script = `
    import { withFileLock } from ${JSON.stringify(path.join(ROOT, 'lib/store/agents/file-lock.ts'))};
    const file = ${JSON.stringify(path.join(corpus, '.state', 'work-claims'))};
    const refuse = (why) => new Error(why);
    const order = [];
    let second;
    await withFileLock(file, async () => {
      order.push('first in');
      second = withFileLock(file, async () => { order.push('second in'); }, refuse).catch((e) => order.push('second failed: ' + e.code));
      await new Promise((resolve) => setTimeout(resolve, 300));
      order.push('first out');
    }, refuse);
    await second;
    process.stdout.write(JSON.stringify(order));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, ...lyingEnv(so, corpus, lies, 'eperm') } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, err);
  assert.deepEqual(JSON.parse(out), ['first in', 'first out', 'second in']);
  assert.match(await readFile(lies, 'utf8'), /^eperm-open .*\.work-claims\.lock$/m, 'the second create was told EPERM');
});

test('a stale lock taken over by another host while this one reads it is not removed from under the new holder', { timeout: 30_000 }, async (t) => {
  const so = await shim(t);
  if (so === null) return;
  const { dir, corpus } = await tempStore(t);
  const lies = path.join(dir, 'lies.log');
  const lock = path.join(corpus, '.state', '.work-claims.lock');
  // A holder on a host that crashed a minute ago: stale to everyone.
  await writeFile(lock, 'host-gone 0badb007 4242\n');
  const minuteAgo = new Date(Date.now() - 60_000);
  await utimes(lock, minuteAgo, minuteAgo);
  const script = `
    import { readFileSync } from 'node:fs';
    import { withFileLock } from ${JSON.stringify(path.join(ROOT, 'lib/store/agents/file-lock.ts'))};
    await withFileLock(${JSON.stringify(path.join(corpus, '.state', 'work-claims'))}, async () => {
      process.stdout.write('entered\\n');
    }, (why) => new Error(why));`;
  // Each read of the lock is slow, as over a network mount: long enough for the other host to act in between.
  const env = { ...process.env, ...lyingEnv(so, corpus, lies, 'none'), FS_LIES_SLOW_READ_MATCH: '.work-claims.lock', FS_LIES_SLOW_READ_MS: '600' };
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await eventually(async () => /^slow-read-open /m.test(await readFile(lies, 'utf8').catch(() => '')), 'the child reading the stale lock');
  // Meanwhile a waiter on another host took the stale lock over and holds its own. Over sshfs a file at one
  // path keeps the client's one inode, so it is written in place here: the same inode, a fresh lock.
  const theirs = 'host-there b0070000 777 0123456789abcdef\n';
  await writeFile(lock, theirs);
  // What is checked is that nothing happens while they hold it: no event to await, so a bounded wait.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  assert.equal(out, '', `the child entered while another host held the lock (${err})`);
  assert.equal(await readFile(lock, 'utf8'), theirs, 'the other host\'s lock is still there');
  await rm(lock); // they are done
  assert.equal(await exited, 0, err);
  assert.equal(out, 'entered\n');
});

test('verify --clean removes this host\'s dead writers\' temp files and reports another host\'s, leaving them', { timeout: 30_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  const tmp = corpusPaths(corpus).tmp;
  const here = { host: 'host-here', boot: hostIdentity().boot };
  const dead = await deadPid();
  const names = {
    foreign: tempName(dead, 0, { host: 'host-there', boot: here.boot }),
    ownDead: tempName(dead, 1, here),
    ownEarlierBoot: tempName(process.pid, 2, { host: here.host, boot: 'b0070000' }),
    ownLive: tempName(process.pid, 3, here),
  };
  for (const name of Object.values(names)) await writeFile(path.join(tmp, name), 'partial');
  const result = await runCli(['verify', '--clean', '--corpus', corpus], { env: { ...process.env, P_E_RELAY_HOST: here.host } });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual((await readdir(tmp)).sort(), [names.foreign, names.ownLive].sort(), 'only this host\'s dead writers\' files are removed');
  assert.match(result.stderr, new RegExp(`${names.foreign.replace(/\./g, '\\.')} was made on host host-there`));
});

/** A pid that no process has now: a child that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

/** An indexer over a corpus of three records, scanned; with what it logged and dropped. */
async function indexedCorpus(t: TestContext) {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus, watch: 'none' });
  for (let i = 0; i < 3; i++) await writer.append(Buffer.from(record({}, `r${i}`)), { depositedBy: 'test' });
  await writer.close();
  const index = new RecordIndex();
  const warnings: string[] = [];
  const removed: string[] = [];
  const log: Logger = { ...silentLogger, warn: (m: string) => warnings.push(m) };
  const indexer = new CorpusIndexer({ index, shape, paths: corpusPaths(corpus), log, onNews() {}, onRemoved: (id) => removed.push(id), wanted: () => true });
  await indexer.scan();
  return { corpus, index, indexer, warnings, removed };
}

test('a stale listing that omits held records drops nothing: lstat finds them before anything is dropped', async (t) => {
  const { index, indexer, warnings, removed } = await indexedCorpus(t);
  await indexer.reconcileWith(['relay-0001']); // as an sshfs or NFS client's cached listing can
  assert.deepEqual([index.has(1), index.has(2), index.has(3)], [true, true, true]);
  assert.deepEqual(removed, []);
  assert.deepEqual(warnings, []);
});

test('a record really gone from disk is still dropped after its listing omits it', async (t) => {
  const { corpus, index, indexer, removed } = await indexedCorpus(t);
  await rm(path.join(corpus, 'relay-0002'));
  await indexer.reconcileWith(['relay-0001', 'relay-0003']);
  assert.equal(index.has(2), false);
  assert.deepEqual(removed, ['relay-0002']);
});

test('a listing says whether it told the index anything: nothing when it names what is held, yes for a record not held or one gone', async (t) => {
  const { corpus, index, indexer } = await indexedCorpus(t);
  assert.equal(await indexer.reconcileWith(['relay-0001', 'relay-0002', 'relay-0003']), false);
  await copyFile(path.join(corpus, 'relay-0003'), path.join(corpus, 'relay-0004')); // a copy by hand: nothing announced it
  assert.equal(await indexer.reconcileWith(['relay-0001', 'relay-0002', 'relay-0003', 'relay-0004']), true);
  assert.equal(index.has(4), true);
  await rm(path.join(corpus, 'relay-0002'));
  assert.equal(await indexer.reconcileWith(['relay-0001', 'relay-0003', 'relay-0004']), true);
  assert.equal(await indexer.reconcileWith(['relay-0001', 'relay-0003', 'relay-0004']), false);
});

test('wait --poll hears a record another process appends by listing the corpus, with kernel events off', { timeout: 30_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  const waiting = runCli(['wait', '--poll', '50', '--after', 'relay-0000', '--timeout', '20000', '--corpus', corpus]);
  const writer = await openStore({ corpus, watch: 'none' });
  t.after(() => writer.close());
  await writer.append(Buffer.from(record({}, 'heard by listing')), { depositedBy: 'test' });
  const result = await waiting;
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /relay-0001/);
});

test('tail --poll without -f is refused: only following waits', async (t) => {
  const { corpus } = await tempStore(t);
  const result = await runCli(['tail', '--poll', '50', '--corpus', corpus]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /--poll applies to tail -f/);
});
