/**
 * What `.state/issued` (lib/store/append/issued-log.ts) says about itself: a new
 * store has no log until its first append, which is no damage and is said
 * at debug level only; a log that vanishes under a running store is news.
 * A real store on real files, its log lines captured.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../../lib/log.js';
import { openStore } from '../../../lib/store/store.js';
import { record, runCli, tempStore } from '../../support/helpers.js';

test('a new store\'s first append starts .state/issued without a word above debug', async (t) => {
  const { corpus } = await tempStore(t);
  const appended = await runCli(['append', '--corpus', corpus], { input: record(), env: { P_E_RELAY_LOG: 'info' } });
  assert.equal(appended.code, 0, appended.stderr);
  assert.doesNotMatch(appended.stderr, /issued/, 'nothing that reads like damage');
  const debug = await runCli(['append', '--corpus', (await tempStore(t)).corpus], { input: record(), env: { P_E_RELAY_LOG: 'debug' } });
  assert.match(debug.stderr, /debug: started the id log .*\.state\/issued at relay-0001/);
});

test('a log removed under a running store is said at info: it was there, and is started again', async (t) => {
  const { corpus } = await tempStore(t);
  const lines: string[] = [];
  const store = await openStore({ corpus, watch: 'none', log: createLogger('info', (line) => lines.push(line)) });
  t.after(() => store.close());
  await store.append(Buffer.from(record()), { depositedBy: 'cli/test' });
  assert.deepEqual(lines.filter((l) => l.includes('issued')), []);
  await rm(path.join(corpus, '.state', 'issued'));
  await store.append(Buffer.from(record()), { depositedBy: 'cli/test' });
  assert.equal(lines.filter((l) => /info: .*\.state\/issued was missing; started it again from relay-0002/.test(l)).length, 1, lines.join(''));
});
