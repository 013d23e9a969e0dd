/**
 * Mirroring with the real rsync: `p-e-relay mirror` fills a corpus from a
 * primary while a real stdio server on the mirror answers from what has
 * arrived. The primary is written in-process; the mirror is only ever
 * written by the `mirror` command, as in production.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, lstat, readdir, readFile, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { ReplayGuard } from '../../lib/auth/replay-guard.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { openStore } from '../../lib/store/store.js';
import { errorCode, record, runCli, stdioClient, tempDir, tempStore, textOf } from '../support/helpers.js';
import { needs } from '../support/needs.js';

const QUIET = { P_E_RELAY_LOG: 'warn' };
/** Every test that runs the mirror command runs the real rsync. */
const RSYNC = needs('rsync');

/** A primary corpus with an open store to append to, and an empty place for its mirror. */
async function primaryAndMirror(t: TestContext) {
  const { dir, corpus } = await tempStore(t);
  const primary = await openStore({ corpus, watch: 'none' });
  t.after(() => primary.close());
  return { primary, source: corpus, mirror: path.join(dir, 'mirror') };
}

function mirror(source: string, dest: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}) {
  return runCli(['mirror', ...extra, '--corpus', dest, source], { env: { ...QUIET, ...env } });
}

async function append(store: Awaited<ReturnType<typeof openStore>>, headers: Record<string, string> = {}, id?: string): Promise<string> {
  return (await store.append(Buffer.from(record(headers)), { id, depositedBy: 'cli/test' })).id;
}

test('mirror copies the records, reports them on stdout, and never copies .state/', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  await append(primary);
  const run = await mirror(source, dest);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, 'arrived (2): relay-0001 relay-0002\n');
  for (const id of ['relay-0001', 'relay-0002']) assert.deepEqual(await readFile(path.join(dest, id)), await readFile(path.join(source, id)));
  assert.deepEqual((await readdir(path.join(dest, '.state'))).sort(), ['mirror', 'replay'], 'the mirror mark and the mirror\'s own signature guard, none of the primary\'s state');
  assert.deepEqual(await readdir(path.join(dest, '.state', 'replay')), [], 'the guard is the mirror\'s own: empty');
  assert.equal((await readFile(path.join(dest, '.state', 'mirror'), 'utf8')).trim(), source);
});

test('a waiter on a read-only mirror wakes for the record rsync brings', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  assert.equal((await mirror(source, dest)).code, 0);
  const { client } = await stdioClient(t, dest, ['--read-only']);
  const waiting = client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0001', timeout_ms: 20_000 } });
  await append(primary, { kind: 'note', from: 'scout-7' });
  const run = await mirror(source, dest);
  assert.equal(run.stdout, 'arrived (1): relay-0002\n');
  const s = (await waiting).structuredContent as { appeared: { id: string; from: string }[]; timedOut: boolean };
  assert.equal(s.timedOut, false);
  assert.deepEqual(s.appeared.map((r) => [r.id, r.from]), [['relay-0002', 'scout-7']]);
});

test('with --poll a waiter on the mirror wakes too (no inotify needed)', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  assert.equal((await mirror(source, dest)).code, 0);
  const { client } = await stdioClient(t, dest, ['--read-only', '--poll', '50']);
  const waiting = client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0001', timeout_ms: 20_000 } });
  await append(primary);
  assert.equal((await mirror(source, dest)).code, 0);
  const s = (await waiting).structuredContent as { appeared: { id: string }[]; timedOut: boolean };
  assert.deepEqual(s.appeared.map((r) => r.id), ['relay-0002']);
});

test('a record whose parent is not mirrored yet names it KNOWN_MISSING, then PRESENT once it arrives', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  // relay-0001 answers relay-0002, which the primary does not hold yet; it is re-deposited later.
  assert.equal(await append(primary, { kind: 'reply', parent: 'relay-0002' }), 'relay-0001');
  assert.equal((await mirror(source, dest)).code, 0);
  const { client } = await stdioClient(t, dest, ['--read-only']);
  const before = await client.callTool({ name: 'exists', arguments: { id: 'relay-0002' } });
  assert.equal(textOf(before), 'relay-0002 KNOWN_MISSING');

  const waiting = client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0001', timeout_ms: 20_000 } });
  assert.equal(await append(primary, { kind: 'question' }, 'relay-0002'), 'relay-0002');
  assert.equal((await mirror(source, dest)).stdout, 'arrived (1): relay-0002\n');
  await waiting;
  const after = await client.callTool({ name: 'exists', arguments: { id: 'relay-0002' } });
  assert.deepEqual(after.structuredContent, { id: 'relay-0002', state: 'PRESENT' });
});

test('append on a mirror is refused over MCP and by the CLI, naming the primary', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  assert.equal((await mirror(source, dest)).code, 0);
  // No --read-only: the mark `mirror` left in .state/ is enough.
  const { client } = await stdioClient(t, dest);
  const refused = await client.callTool({ name: 'append_relay', arguments: { bytes: record() } });
  assert.equal(refused.isError, true);
  assert.equal(errorCode(refused), 'read_only');
  assert.match(textOf(refused), new RegExp(`primary at ${source}`));

  const cli = await runCli(['append', '--corpus', dest], { input: record(), env: QUIET });
  assert.equal(cli.code, 1);
  assert.match(cli.stderr, /read-only mirror.*primary at/);
  assert.deepEqual((await readdir(dest)).filter((n) => n.startsWith('relay-')), ['relay-0001']);
});

test('serve --read-only --primary URL refuses appends naming the URL, and still answers reads', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  await append(store);
  await store.close();
  const url = 'http://hub.example:7077/mcp';
  const { client } = await stdioClient(t, corpus, ['--read-only', '--primary', url]);
  const refused = await client.callTool({ name: 'append_relay', arguments: { bytes: record() } });
  assert.equal(errorCode(refused), 'read_only');
  assert.ok(textOf(refused).includes(`primary at ${url}`), textOf(refused));
  const list = await client.callTool({ name: 'list_relays', arguments: {} });
  assert.equal(textOf(list), 'present (1): relay-0001\nknown missing (0):');
});

test('running mirror again copies nothing new and never overwrites a record it holds', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  assert.equal((await mirror(source, dest)).code, 0);
  const held = path.join(dest, 'relay-0001');
  const bytes = await readFile(held);
  const inode = (await stat(held)).ino;
  // The primary's copy changes behind the store's back (damage, a hand edit).
  await chmod(path.join(source, 'relay-0001'), 0o644);
  await writeFile(path.join(source, 'relay-0001'), 'edited on the primary\n');
  const again = await mirror(source, dest);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'arrived (0):\n');
  assert.deepEqual(await readFile(held), bytes);
  assert.equal((await stat(held)).ino, inode, 'the file was not replaced');
});

test('mirror works over a remote shell (host:path), here a stand-in for ssh', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  // Does what ssh does with rsync's remote command, minus the network: drop the host, run it here.
  const rsh = path.join(await tempDir(t), 'fake-ssh');
  await writeFile(rsh, '#!/bin/sh\nshift\nexec sh -c "$*"\n', { mode: 0o755 });
  const run = await mirror(`primary.example:${source}`, dest, ['--rsh', rsh]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, 'arrived (1): relay-0001\n');
  assert.deepEqual(await readFile(path.join(dest, 'relay-0001')), await readFile(path.join(source, 'relay-0001')));
});

test('mirror will not fill a corpus that holds records of its own, and leaves it unmarked', async (t) => {
  const a = await primaryAndMirror(t);
  const b = await primaryAndMirror(t);
  await append(a.primary);
  await append(b.primary);
  const run = await mirror(a.source, b.source);
  assert.equal(run.code, 1);
  assert.match(run.stderr, /of its own.*Mirror into a new or empty directory/);
  await assert.rejects(stat(path.join(b.source, '.state', 'mirror')));
});

test('without rsync, mirror says how to install it', async (t) => {
  const { source, mirror: dest } = await primaryAndMirror(t);
  const run = await mirror(source, dest, [], { PATH: await tempDir(t) });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /rsync is not installed.*apt-get install rsync/);
});

test('mirror never copies a FIFO, even one named like a record', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  const made = await new Promise<number | null>((resolve) => spawn('mkfifo', [path.join(source, 'relay-0009')]).on('close', resolve).on('error', () => resolve(null)));
  if (made !== 0) return t.skip('mkfifo is not available here');
  const run = await mirror(source, dest);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, 'arrived (1): relay-0001\n');
  await assert.rejects(stat(path.join(dest, 'relay-0009')), { code: 'ENOENT' });
});

test('mirror --every keeps pulling on its schedule, printing what arrives, until SIGTERM', { ...RSYNC, timeout: 60_000 }, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  const child = spawn(process.execPath, [path.join(import.meta.dirname, '..', '..', 'bin', 'p-e-relay'), 'mirror', '--every', '200', '--corpus', dest, source], { env: { ...process.env, ...QUIET } });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  const printed = (line: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`mirror --every did not print "${line}" (stdout: ${out})`)), 30_000);
      const look = () => {
        if (!out.includes(line)) return;
        clearTimeout(timer);
        child.stdout.off('data', look);
        resolve();
      };
      child.stdout.on('data', look);
      look();
    });
  await append(primary);
  await printed('arrived (1): relay-0001');
  await append(primary);
  await printed('arrived (1): relay-0002');
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0);
  assert.equal(out, 'arrived (1): relay-0001\narrived (1): relay-0002\n', 'a run that brings nothing prints nothing');
});

test('a new mirror\'s signature guard remembers from the start: a hub on it takes a fresh signature at once, not guard_reset', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  const run = await mirror(source, dest);
  assert.equal(run.code, 0, run.stderr);
  const guard = new ReplayGuard(corpusPaths(dest).replay);
  assert.equal(await guard.accept('sig-on-a-new-mirror', String(Math.floor(Date.now() / 1000)), 'watcher'), true);
});

test('a mirror mark that is a FIFO or a symlink is a mark naming no primary: mirror runs at once and writes a real one', RSYNC, async (t) => {
  const { primary, source, mirror: dest } = await primaryAndMirror(t);
  await append(primary);
  assert.equal((await mirror(source, dest)).code, 0);
  const mark = path.join(dest, '.state', 'mirror');
  const secret = path.join(path.dirname(dest), 'secret');
  await writeFile(secret, 'not to be overwritten\n');
  for (const plant of [() => spawnDone('mkfifo', [mark]), () => symlink(secret, mark)]) {
    await unlink(mark);
    await plant();
    await append(primary);
    const run = await mirror(source, dest);
    assert.equal(run.code, 0, run.stderr);
    assert.ok((await lstat(mark)).isFile(), 'the mark was replaced by a regular file');
    assert.equal((await readFile(mark, 'utf8')).trim(), source);
  }
  assert.equal(await readFile(secret, 'utf8'), 'not to be overwritten\n', 'never written through a symlink');
});

function spawnDone(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => spawn(command, args).on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`)))).on('error', reject));
}
