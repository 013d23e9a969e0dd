/**
 * The long wait over HTTP (spec §8, §9): a client whose request timeout is
 * shorter than the wait stays alive on progress notifications, which only
 * an event-stream answer can carry. Its own file because it takes ~12 s
 * (progress comes every 10 s), so it runs beside the other files.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { record } from '../support/helpers.js';
import { httpClient, startTestHub } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';

test('progress notifications keep a wait alive past the client\'s request timeout', async (t) => {
  const h = await startTestHub(t);
  const client = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const progress: number[] = [];
  const started = Date.now();
  const waiting = client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 30_000 } }, {
    timeout: 11_000, // shorter than the wait below; only progress resets it
    resetTimeoutOnProgress: true,
    onprogress: (p) => progress.push(p.progress),
  });
  await eventually(() => progress.length > 0, 'a progress notification', { timeoutMs: 12_000 });
  // Past the client's 11 s: without progress the call would have failed by now.
  await eventually(() => Date.now() - started > 11_500, 'the client timeout to pass', { timeoutMs: 13_000 });
  await h.store.append(Buffer.from(record({ kind: 'late', to: 'all' })), { depositedBy: 'cli/test' });
  const result = await waiting;
  assert.deepEqual((result.structuredContent as { appeared: { kind: string }[] }).appeared.map((r) => r.kind), ['late']);
  assert.ok(progress[0]! >= 9_000, `progress reports the time waited (${progress[0]} ms)`);
});
