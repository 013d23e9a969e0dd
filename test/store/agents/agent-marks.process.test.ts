/**
 * The agents' marks on disk (spec §8d, §8a's inbox): one per agent and
 * filter set, the legacy per-agent file, and a mark path that holds
 * something other than a mark. The real CLI as a child process over real
 * files; nothing at a mark's path is followed, blocked on or read whole.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readFile, readlink, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../../lib/store/store.js';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { BIN, record, runCli, runProcess, stdioClient, tempStore } from '../../support/helpers.js';
import { needs, toolPath } from '../../support/needs.js';

async function seed(corpus: string, records: string[]): Promise<string[]> {
  const store = await openStore({ corpus, watch: 'none' });
  try {
    const ids: string[] = [];
    for (const text of records) ids.push((await store.append(Buffer.from(text), { depositedBy: 'cli/test' })).id);
    return ids;
  } finally {
    await store.close();
  }
}

const inbox = (corpus: string, ...args: string[]) => runCli(['inbox', '--corpus', corpus, '--format', 'json', ...args]);
const idsOf = (stdout: string) => (JSON.parse(stdout) as { items: { id: string }[] }).items.map((i) => i.id);
const marks = (corpus: string) => path.join(corpus, '.state', 'marks');

test('one inbox mark per filter set: --to a --to all and --to all --to a share one, --to a alone has its own', async (t) => {
  const { corpus } = await tempStore(t);
  for (const args of [['--to', 'scout-7'], ['--to', 'scout-7', '--to', 'all']]) assert.equal((await inbox(corpus, ...args)).code, 0);
  const [mine, broadcast] = await seed(corpus, [record({ kind: 'question', from: 'planner', to: 'scout-7' }), record({ kind: 'question', from: 'planner', to: 'all' })]);
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'scout-7')).stdout), [mine]);
  // The first --to alone moved its own mark past the broadcast; the other set still owes it.
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'all', '--to', 'scout-7')).stdout), [mine, broadcast]);
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'scout-7', '--to', 'all')).stdout), [], 'the same set, in another order');
  const first = (name: string) => readFile(path.join(marks(corpus), 'scout-7', name), 'utf8').then((x) => x.split('\n')[0]);
  assert.equal(await first('to=scout-7'), 'relay-0002');
  assert.equal(await first('to=all,scout-7'), 'relay-0002');
});

test('a new --to list first run after a broadcast still prints it: every set starts at the agent\'s first start, not at its own first use', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [record({ kind: 'question', from: 'planner', to: 'all' }, 'before scout-7 started')]);
  assert.equal((await inbox(corpus, '--to', 'scout-7', '--to', 'all')).code, 0, 'scout-7 starts');
  const [between] = await seed(corpus, [record({ kind: 'question', from: 'planner', to: 'all' }, 'between two runs')]);
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'scout-7', '--to', 'all', '--to', 'team')).stdout), [between]);
});

test('a legacy mark file .state/marks/NAME is moved aside and seeds the new marks', async (t) => {
  const { corpus } = await tempStore(t);
  const [, , third] = await seed(corpus, [1, 2, 3].map((i) => record({ kind: 'note', from: 'planner', to: 'scout-7' }, `note ${i}`)));
  await mkdir(marks(corpus), { recursive: true });
  await writeFile(path.join(marks(corpus), 'scout-7'), 'relay-0002\n');
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'scout-7', '--to', 'all')).stdout), [third]);
  assert.ok((await lstat(path.join(marks(corpus), 'scout-7'))).isDirectory());
  assert.equal(await readFile(path.join(marks(corpus), 'scout-7@legacy'), 'utf8'), 'relay-0002\n');
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'scout-7')).stdout), [third], 'another set starts there too');
});

for (const [what, plant] of [
  ['a symlink to a secret file', async (file: string, dir: string) => {
    await writeFile(path.join(dir, 'secret'), 'relay-0001 TOP-SECRET-CONTENT\n');
    await symlink(path.join(dir, 'secret'), file);
  }],
  ['a symlink to /dev/zero', async (file: string) => symlink('/dev/zero', file)],
  ['a FIFO', async (file: string) => void execFileSync('mkfifo', [file])],
  ['a 1 GiB sparse file', async (file: string) => {
    await writeFile(file, 'relay-0001\n');
    await truncate(file, 1024 ** 3);
  }],
] as const) {
  test(`a mark that is ${what} is refused bad_mark at once: not followed, not blocked on, not read, its target never printed`, async (t) => {
    const { corpus, dir } = await tempStore(t);
    await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'scout-7' })]);
    await mkdir(path.join(marks(corpus), 'scout-7'), { recursive: true });
    const file = path.join(marks(corpus), 'scout-7', 'to=scout-7');
    await plant(file, dir);
    const started = Date.now();
    const result = await inbox(corpus, '--to', 'scout-7');
    assert.equal(result.code, 1, result.stderr);
    assert.ok(Date.now() - started < 10_000);
    assert.match(result.stderr, /cannot be used/);
    assert.doesNotMatch(result.stderr, /TOP-SECRET|\/dev\/zero|secret/);
    assert.equal(result.stdout, '');
    // Whatever was there is still there: the refusal wrote nothing through it.
    if (what.startsWith('a symlink')) assert.ok((await readlink(file)).length > 0);
    if (what.includes('secret')) assert.equal(await readFile(path.join(dir, 'secret'), 'utf8'), 'relay-0001 TOP-SECRET-CONTENT\n');
  });
}

test('--mark FILE is written through an unguessable temp name: a symlink planted at the old predictable name is never written through', async (t) => {
  const { corpus, dir } = await tempStore(t);
  await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'scout-7' })]);
  const mark = path.join(dir, 'mark');
  const victim = path.join(dir, 'victim');
  await writeFile(victim, 'untouched\n');
  // The names the old inbox wrote its temp file under: `${file}.${pid}.tmp`, for the pids a child may get.
  for (let pid = 1; pid < 200; pid++) await symlink(victim, `${mark}.${pid}.tmp`).catch(() => {});
  const result = await inbox(corpus, '--to', 'scout-7', '--mark', mark);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(await readFile(mark, 'utf8'), 'relay-0001\n');
  assert.equal(await readFile(victim, 'utf8'), 'untouched\n');
});

test('the inbox and a named server\'s waits share the agent\'s mark: what one delivered the other does not deliver again', async (t) => {
  const { corpus } = await tempStore(t);
  const { client: bob } = await stdioClient(t, corpus, ['--agent', 'bob']);
  const wait = async () => ((await bob.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } })) as CallToolResult).structuredContent as { appeared: { id: string }[] };
  await wait(); // bob starts
  const [q1] = await seed(corpus, [record({ kind: 'question', from: 'ana', to: 'bob' }, 'by hook')]);
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'bob', '--to', 'all')).stdout), [q1]);
  assert.deepEqual((await wait()).appeared.map((a) => a.id), [], 'the hook printed it: the loop does not get it again');
  const [q2] = await seed(corpus, [record({ kind: 'question', from: 'ana', to: 'all' }, 'by loop')]);
  assert.deepEqual((await wait()).appeared.map((a) => a.id), [q2]);
  await bob.callTool({ name: 'list_relays', arguments: {} }); // the proof
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'all', '--to', 'bob')).stdout), [], 'the loop had it: the hook does not print it');
});

test('a new mark is fsynced into its directory, and a new agent\'s directory into .state/marks/; a mark replaced is not synced again', needs('strace'), async (t) => {
  const { corpus, dir } = await tempStore(t);
  await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'scout-7' })]);
  // Every fsync of the inbox run and of its threads, with the path of what was synced.
  const syncedBy = async (trace: string) => {
    const run = await runProcess([toolPath('strace')!, '-f', '-y', '-e', 'trace=fsync', '-o', trace, process.execPath, BIN, 'inbox', '--corpus', corpus, '--to', 'scout-7', '--format', 'json']);
    assert.equal(run.code, 0, run.stderr);
    return [...(await readFile(trace, 'utf8')).matchAll(/fsync\(\d+<([^>]*)>\) = 0/g)].map((m) => path.relative(corpus, m[1]!));
  };
  const first = await syncedBy(path.join(dir, 'first.trace'));
  assert.ok(first.includes(path.join('.state', 'marks')), `the agent's new directory: ${first.join(', ')}`);
  assert.ok(first.includes(path.join('.state', 'marks', 'scout-7')), `the new mark: ${first.join(', ')}`);
  await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'scout-7' }, 'again')]);
  const again = await syncedBy(path.join(dir, 'again.trace'));
  assert.deepEqual(again.filter((file) => !file.endsWith('.tmp')), [], 'the mark moved: its bytes synced, no directory');
});

test('a mark ahead of the store (relay-0099 in a store of two records) is refused bad_mark naming the newest id, and the record that lands next is not skipped', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [1, 2].map((i) => record({ kind: 'note', from: 'planner', to: 'scout-7' }, `note ${i}`)));
  await mkdir(path.join(marks(corpus), 'scout-7'), { recursive: true });
  const file = path.join(marks(corpus), 'scout-7', 'to=scout-7');
  await writeFile(file, 'relay-0099\n');
  const [third] = await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'scout-7' }, 'note 3')]);
  const refused = await inbox(corpus, '--to', 'scout-7');
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /it says relay-0099, ahead of this store \(the newest id it has reached is relay-0003\)/);
  assert.equal(await readFile(file, 'utf8'), 'relay-0099\n', 'the mark did not move');
  await writeFile(file, 'relay-0002\n');
  assert.deepEqual(idsOf((await inbox(corpus, '--to', 'scout-7')).stdout), [third]);
});
