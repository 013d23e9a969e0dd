/**
 * How much one caller can make a process watch (lib/store/hear/bells.ts,
 * lib/model/filter.ts): a filter names at most 64 names, a process watches
 * at most its cap of bells and then hears new listeners through the
 * directory, and a bell nobody rang leaves no file when it is let go.
 * Real files and real inotify watches in a temp dir.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { Bells, bellFile } from '../../lib/store/hear/bells.js';
import { silentLogger } from '../../lib/log.js';
import { errorCode, stdioClient, tempDir, tempStore, textOf } from '../support/helpers.js';
import { eventually } from '../support/poll.js';

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
  const first = bells.listen(names('a', 3));
  assert.ok(first);
  assert.equal(bells.listen(names('b', 3)), null, 'three more would be six watches, and the first three are in use');
  assert.equal(bells.watched, 3);
  first();
  const second = bells.listen(names('b', 3));
  assert.ok(second, 'the lingering bells were let go to make room');
  assert.equal(bells.watched, 4, 'one of the first three still lingers; never more than the cap');
  assert.equal(bellsIn(dir), 4, 'the bells let go, made here and never rung, left no file');
  second();
});

test('a bell made here and never rung leaves no file once let go; one that was rung stays for its writers', async (t) => {
  const dir = path.join(await tempDir(t), 'bells');
  let rings = 0;
  const bells = new Bells(dir, silentLogger, () => rings++, { lingerMs: 20 });
  t.after(() => bells.close());
  const rungFile = bellFile(dir, 'to:rung');
  const release = bells.listen(['to:idle', 'to:rung']);
  assert.ok(release);
  const madeAt = statSync(rungFile).mtimeMs;
  await eventually(() => Date.now() > madeAt + 2, 'a clock tick past the bell\'s making', { everyMs: 1 });
  bells.ring(['to:rung']);
  await eventually(() => rings > 0, 'the ring heard');
  release();
  await eventually(() => bells.watched === 0, 'both bells let go after their linger');
  assert.deepEqual([existsSync(bellFile(dir, 'to:idle')), existsSync(rungFile)], [false, true]);
});
