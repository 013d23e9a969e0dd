/**
 * What one agent can make the relay keep and read for it (spec §8d marks):
 * a bounded number of marks of a bounded size, each readable back; a mark
 * that cannot be read fails only the call that needs it and names no path
 * of this machine; receipts read no mark that has not changed; and two
 * processes moving one mark at once never move it back.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fsp, { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { silentLogger } from '../../../lib/log.js';
import { idShape } from '../../../lib/model/ids.js';
import { parseFilter, MAX_FILTER_NAME_LENGTH, MAX_FILTER_NAMES } from '../../../lib/model/filter.js';
import { AgentDeliveries, type DeliveryFeed } from '../../../lib/store/agents/deliveries.js';
import { MAX_MARK_BYTES, readMarkFile } from '../../../lib/store/agents/mark-file.js';
import { AgentMarks, MAX_SETS_PER_AGENT } from '../../../lib/store/agents/marks.js';
import { errorCode, record, stdioClient, tempDir, tempStore, textOf } from '../../support/helpers.js';

const shape = idShape(4);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function feed(head = 10): DeliveryFeed {
  return {
    shape,
    head,
    ready: Promise.resolve(),
    state: 'open',
    wait: () => Promise.reject(new Error('not used')),
    eachHeldAfter: () => [],
    markOf: async (after) => shape.parse(after)!,
  };
}

test('an agent keeps at most 64 marks: a new filter set past that removes the least recently moved', async (t) => {
  const dir = await tempDir(t);
  const marks = new AgentMarks(path.join(dir, 'marks'), shape, () => 5, silentLogger);
  const set = (i: number) => parseFilter({ kind: `k${i}` }, shape);
  for (let i = 0; i < MAX_SETS_PER_AGENT; i++) await marks.deliverThrough('bob', set(i), 7);
  // Moved in order a second apart (a clock tick may hold many writes): k0 is the least recently moved.
  for (let i = 0; i < MAX_SETS_PER_AGENT; i++) await fsp.utimes(marks.file('bob', set(i)), new Date(Date.now() - 3_600_000 + i * 1000), new Date(Date.now() - 3_600_000 + i * 1000));
  await marks.deliverThrough('bob', set(0), 8); // k0 moves again: now k1 is the oldest
  for (let i = MAX_SETS_PER_AGENT; i < MAX_SETS_PER_AGENT + 3; i++) await marks.deliverThrough('bob', set(i), 7);
  const kept = (await readdir(path.join(dir, 'marks', 'bob'))).filter((name) => !name.startsWith('.'));
  assert.equal(kept.length, MAX_SETS_PER_AGENT);
  assert.deepEqual(['k0', 'k1', 'k2', 'k3', 'k4', `k${MAX_SETS_PER_AGENT + 2}`].map((k) => kept.includes(`kind=${k}`)), [true, false, false, false, true, true]);
});

test('a filter name longer than 256 characters is refused bad_filter; a mark of 64 names of the longest allowed is under 16 KiB and reads back', async (t) => {
  assert.throws(() => parseFilter({ to: ['x'.repeat(MAX_FILTER_NAME_LENGTH + 1)] }, shape), /at most 256/);
  const dir = await tempDir(t);
  const marks = new AgentMarks(path.join(dir, 'marks'), shape, () => 5, silentLogger);
  const names = Array.from({ length: MAX_FILTER_NAMES }, (_, i) => `${i}`.padEnd(MAX_FILTER_NAME_LENGTH, 'n'));
  const filter = parseFilter({ to: names }, shape);
  await marks.deliverIds('bob', filter, Array.from({ length: 600 }, (_, i) => 100 + i));
  await marks.deliverThrough('bob', filter, 9);
  const file = marks.file('bob', filter);
  assert.ok((await stat(file)).size < MAX_MARK_BYTES, `${(await stat(file)).size} bytes`);
  assert.equal((await readMarkFile(file, shape))!.after, 9);
});

test('a mark the server cannot read fails only the call that needs it, and the refusal names no absolute path', async (t) => {
  const { corpus } = await tempStore(t);
  const { client: bob } = await stdioClient(t, corpus, ['--agent', 'bob']);
  const call = (name: string, args: Record<string, unknown>) => bob.callTool({ name, arguments: args }) as Promise<CallToolResult>;
  const appended = await call('append_relay', { bytes: record({ kind: 'note', from: 'bob', to: 'ana' }) });
  assert.notEqual(appended.isError, true, textOf(appended));
  // An answer for the kind=note set is pending; then its mark becomes something the reader refuses.
  const waited = await call('wait_for_relay', { kind: 'note', timeout_ms: 0 });
  assert.notEqual(waited.isError, true, textOf(waited));
  await mkdir(path.join(corpus, '.state', 'marks', 'bob'), { recursive: true });
  await writeFile(path.join(corpus, '.state', 'marks', 'bob', 'kind=note'), 'x'.repeat(MAX_MARK_BYTES + 1));
  const other = await call('exists', { id: 'relay-0001' });
  assert.notEqual(other.isError, true, `an unrelated call is answered: ${textOf(other)}`);
  const otherSet = await call('wait_for_relay', { timeout_ms: 0 });
  assert.notEqual(otherSet.isError, true, `another filter set is answered: ${textOf(otherSet)}`);
  const refused = await call('wait_for_relay', { kind: 'note', timeout_ms: 0 });
  assert.equal(errorCode(refused), 'bad_mark');
  assert.match(textOf(refused), /\.state\/marks\/bob\/kind=note/);
  assert.ok(!textOf(refused).includes(corpus), textOf(refused));
});

test('receipts read no mark file that has not changed since the last receipt, and see one another process moved', async (t) => {
  const dir = await tempDir(t);
  const deliveries = new AgentDeliveries(feed(), { marks: path.join(dir, 'marks'), roster: path.join(dir, 'roster') }, silentLogger);
  for (let i = 0; i < 40; i++) await deliveries.marks.deliverThrough(`agent-${i % 8}`, parseFilter({ to: [`agent-${i % 8}`, 'all', `x${i}`] }, shape), 12);
  await deliveries.deliveredTo(11, 'all', 'ana');
  // Stamps younger than the racy window are looked at again; age every mark past it.
  const old = new Date(Date.now() - 60_000);
  for (const agent of await readdir(path.join(dir, 'marks'))) {
    for (const key of await readdir(path.join(dir, 'marks', agent))) await fsp.utimes(path.join(dir, 'marks', agent, key), old, old);
    await fsp.utimes(path.join(dir, 'marks', agent), old, old);
  }
  await fsp.utimes(path.join(dir, 'marks'), old, old);
  await deliveries.deliveredTo(11, 'all', 'ana');
  const open = fsp.open;
  let opened = 0;
  fsp.open = ((...args: Parameters<typeof open>) => {
    opened++;
    return open(...args);
  }) as typeof open;
  try {
    assert.equal((await deliveries.deliveredTo(11, 'all', 'ana'))!.length, 8);
    assert.equal(opened, 0, 'no mark file was opened');
  } finally {
    fsp.open = open;
  }
  // Another process (another instance here) moves agent-0's mark past record 13: the next receipt sees it.
  const elsewhere = new AgentMarks(path.join(dir, 'marks'), shape, () => 10, silentLogger);
  await elsewhere.deliverThrough('agent-0', parseFilter({ to: ['agent-0', 'all', 'x0'] }, shape), 13);
  assert.deepEqual(await deliveries.deliveredTo(13, 'all', 'ana'), ['agent-0']);
});

test('two processes moving one mark at once never move it back', async (t) => {
  const dir = await tempDir(t);
  const script = path.join(dir, 'mover.mts');
  await writeFile(script, `
import { AgentMarks } from ${JSON.stringify(path.join(ROOT, 'lib/store/agents/marks.ts'))};
import { idShape } from ${JSON.stringify(path.join(ROOT, 'lib/model/ids.ts'))};
import { silentLogger } from ${JSON.stringify(path.join(ROOT, 'lib/log.ts'))};
const [dir, parity] = process.argv.slice(2);
const marks = new AgentMarks(dir, idShape(4), () => 0, silentLogger);
for (let i = 1; i <= 40; i++) await marks.deliverThrough('bob', { to: new Set(['bob', 'all']) }, i * 2 - Number(parity));
`);
  const run = (marksDir: string, parity: number) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', script, marksDir, String(parity)], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`mover exited ${code}`))));
    });
  const behind: string[] = [];
  for (let trial = 0; trial < 8; trial++) {
    const marksDir = path.join(dir, `trial-${trial}`);
    await Promise.all([run(marksDir, 0), run(marksDir, 1)]);
    const last = (await readFile(path.join(marksDir, 'bob', 'to=all,bob'), 'utf8')).split('\n')[0]!;
    if (last !== 'relay-0080') behind.push(last);
  }
  assert.deepEqual(behind, [], 'every trial ends at the highest move, relay-0080');
});
