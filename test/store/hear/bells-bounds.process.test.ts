/**
 * How much one caller can make a process watch (lib/store/hear/bells.ts,
 * lib/model/filter.ts): a filter names at most 64 names, a process watches
 * at most its cap of bells and then hears new listeners through the
 * directory, and a bell nobody rang leaves no file when it is let go.
 * Real files and real inotify watches in a temp dir.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { bellFile } from '../../../lib/store/hear/bell-keys.js';
import { Bells, DEFAULT_MAX_BELLS } from '../../../lib/store/hear/bells.js';
import { holdersRoot } from '../../../lib/store/hear/bell-holders.js';
import { silentLogger } from '../../../lib/log.js';
import { openStore } from '../../../lib/store/store.js';
import { BIN, errorCode, killed, record, stdioClient, tempDir, tempStore, textOf } from '../../support/helpers.js';
import { eventually } from '../../support/poll.js';

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const bellsIn = (dir: string) => (existsSync(dir) ? readdirSync(dir).length : 0);

test('a wait whose to: names 65 names is refused bad_filter naming the cap, and makes no bell', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const result = (await client.callTool({ name: 'wait_for_relay', arguments: { to: names('n', 65), after: 'relay-0000', timeout_ms: 0 } })) as CallToolResult;
  assert.equal(result.isError, true);
  assert.equal(errorCode(result), 'bad_filter');
  assert.match(textOf(result), /at most 64/);
  assert.equal(bellsIn(path.join(corpus, '.state', 'bells')), 0);
  const ok = (await client.callTool({ name: 'wait_for_relay', arguments: { to: names('n', 64), after: 'relay-0000', timeout_ms: 0 } })) as CallToolResult;
  assert.notEqual(ok.isError, true, textOf(ok));
});

test('past its cap a process lets lingering bells go first, then refuses bells (the caller watches the directory)', async (t) => {
  const dir = path.join(await tempDir(t), 'bells');
  const bells = new Bells(dir, silentLogger, () => {}, { maxWatched: 4, lingerMs: 60_000 });
  t.after(() => bells.close());
  const first = await bells.listen(names('a', 3));
  assert.ok(first);
  assert.equal(await bells.listen(names('b', 3)), null, 'three more would be six watches, and the first three are in use');
  assert.equal(bells.watched, 3);
  first();
  const second = await bells.listen(names('b', 3));
  assert.ok(second, 'the lingering bells were let go to make room');
  assert.equal(bells.watched, 4, 'one of the first three still lingers; never more than the cap');
  await bells.tidied();
  assert.equal(bellsIn(dir), 4, 'the bells let go, made here and never rung, left no file');
  second();
});

test('a wait past the process\'s bells is heard through the directory: a record for it wakes it, with no listing to fall back on', { timeout: 60_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  const reader = await openStore({ corpus, reconcileMs: 600_000 }); // no periodic listing in this test's time: only a watch can wake it
  const writer = await openStore({ corpus, reconcileMs: 600_000 });
  t.after(() => Promise.all([writer.close(), reader.close()]));
  const filler = Array.from({ length: DEFAULT_MAX_BELLS / 64 }, (_, i) => reader.wait({ after: 'relay-0000', timeoutMs: 50_000, filter: { to: new Set(names(`w${i}`, 64)) } }));
  await eventually(() => reader.listening.bells === DEFAULT_MAX_BELLS, 'the waits to hold every bell this process may watch', { timeoutMs: 30_000 });
  assert.equal(reader.listening.directory, false);
  const late = reader.wait({ after: 'relay-0000', timeoutMs: 20_000, filter: { to: new Set(['late']) } });
  await eventually(() => reader.listening.directory, 'the wait past the cap to be heard through the directory');
  assert.equal(reader.listening.bells, DEFAULT_MAX_BELLS, 'never more bells than the cap');
  await writer.append(Buffer.from(record({ kind: 'note', to: 'late' }, 'for the wait past the cap')), { depositedBy: 'test' });
  const answer = await late;
  assert.deepEqual([answer.appeared.map((r) => r.id), answer.timedOut], [['relay-0001'], false]);
  const fillersEnded = Promise.allSettled(filler); // before close: each is refused store_closed as the store closes
  await reader.close();
  await fillersEnded;
});

test('a record to 64 recipients nobody waits for makes no bell file: a ring touches only bells that exist; a waiting recipient\'s is rung', async (t) => {
  const { corpus } = await tempStore(t);
  const bellsDir = path.join(corpus, '.state', 'bells');
  const writer = await openStore({ corpus });
  t.after(() => writer.close());
  const stored = await writer.append(Buffer.from(record({ kind: 'note', to: names('r', 64).join(', ') }, 'to many, heard by none')), { depositedBy: 'test' });
  assert.equal(stored.id, 'relay-0001');
  assert.equal(bellsIn(bellsDir), 0, 'no bell made by ringing');
  const reader = await openStore({ corpus, reconcileMs: 600_000 });
  t.after(() => reader.close());
  const waiting = reader.wait({ after: 'relay-0001', timeoutMs: 20_000, filter: { to: new Set(['r-7']) } });
  await eventually(() => reader.listening.bells === 1, 'the wait listening to its bell');
  await writer.append(Buffer.from(record({ kind: 'note', to: names('r', 64).join(', ') }, 'to many, heard by one')), { depositedBy: 'test' });
  assert.deepEqual((await waiting).appeared.map((r) => r.id), ['relay-0002']);
  assert.equal(bellsIn(bellsDir), 1, 'only the waiting recipient\'s bell');
});

test('a bell made here and never rung leaves no file once let go; one that was rung stays for its writers', async (t) => {
  const dir = path.join(await tempDir(t), 'bells');
  let rings = 0;
  const bells = new Bells(dir, silentLogger, () => rings++, { lingerMs: 20 });
  t.after(() => bells.close());
  const rungFile = bellFile(dir, 'to:rung');
  const release = await bells.listen(['to:idle', 'to:rung']);
  assert.ok(release);
  const madeAt = statSync(rungFile).mtimeMs;
  await eventually(() => Date.now() > madeAt + 2, 'a clock tick past the bell\'s making', { everyMs: 1 });
  bells.ring(['to:rung']);
  await eventually(() => rings > 0, 'the ring heard');
  release();
  await eventually(() => bells.watched === 0, 'both bells let go after their linger');
  await bells.tidied();
  assert.deepEqual([existsSync(bellFile(dir, 'to:idle')), existsSync(rungFile)], [false, true]);
});

test('bells closed while they are being set up leave no bell file and no marker once close resolves: nothing is written under .state/ after', async (t) => {
  const dir = path.join(await tempDir(t), 'bells');
  const bells = new Bells(dir, silentLogger, () => {});
  const listening = bells.listen(names('n', 64));
  await bells.close();
  assert.equal(await listening, null, 'a listen that ends with its store hears nothing');
  assert.deepEqual([bellsIn(dir), bellsIn(holdersRoot(dir))], [0, 0]);
});

test('the bells of a process killed with SIGKILL are swept by the next process to listen; a live process\'s bells, shared ones too, stay', async (t) => {
  const { corpus } = await tempStore(t);
  const bellsDir = path.join(corpus, '.state', 'bells');
  const holdersDir = path.join(corpus, '.state', 'bell-holders');
  const waiter = (names: string[], env: Record<string, string> = {}) => {
    const child = spawn(process.execPath, [BIN, 'wait', '--corpus', corpus, '--timeout', '90000', ...names.flatMap((n) => ['--to', n])], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return killed(child);
    });
    return { child, stderr: () => stderr };
  };
  const markersOf = (pid: number) => {
    const holder = (existsSync(holdersDir) ? readdirSync(holdersDir) : []).find((name) => name.split('.')[2] === String(pid));
    return holder === undefined ? [] : readdirSync(path.join(holdersDir, holder));
  };
  const doomed = waiter(['doomed', 'shared']);
  const live = waiter(['live', 'shared']);
  await eventually(() => markersOf(doomed.child.pid!).length === 2 && markersOf(live.child.pid!).length === 2, 'both waiters to hold their two bells');
  await eventually(() => bellsIn(bellsDir) === 3, 'three bell files');
  // Rung last an hour ago, past the sweep's grace, as a crash long before would leave them (this rings them once more).
  const longAgo = new Date(Date.now() - 3600_000);
  for (const name of readdirSync(bellsDir)) utimesSync(path.join(bellsDir, name), longAgo, longAgo);
  doomed.child.kill('SIGKILL');
  await killed(doomed.child);
  assert.ok(existsSync(bellFile(bellsDir, 'to:doomed')), 'SIGKILL left its bell');

  const next = waiter(['next'], { P_E_RELAY_LOG: 'info' });
  await eventually(() => /doorbells: removed/.test(next.stderr()), 'the next process to sweep', { timeoutMs: 20_000 });
  assert.match(next.stderr(), /removed 1 bell file\(s\) nobody holds and the holders of 1 process\(es\) that are gone/);
  assert.deepEqual(['to:doomed', 'to:shared', 'to:live'].map((key) => existsSync(bellFile(bellsDir, key))), [false, true, true]);
  assert.deepEqual(markersOf(doomed.child.pid!), [], 'its holder directory is gone');
  assert.equal(markersOf(live.child.pid!).length, 2);
});
