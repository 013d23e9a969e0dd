/**
 * A wait that fits its client (spec §8): a wait_for_relay call with no
 * progress token is held at most UNHELD_MAX_WAIT_MS, whatever timeout_ms
 * says; with one, up to MAX_WAIT_MS. Each door's computed window is checked
 * here without 50 s of wall time; test/mcp/unheld-wait.slow.test.ts holds
 * real waits through real processes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callPlan, UNHELD_TRIP_MS } from '../../lib/bridge/forward-call.js';
import { waitForRelay } from '../../lib/mcp/tools/wait-for-relay.js';
import { idShape } from '../../lib/model/ids.js';
import type { RelayStore } from '../../lib/store/store.js';
import { clampWait, DEFAULT_WAIT_MS, MAX_WAIT_MS, UNHELD_MAX_WAIT_MS, UNHELD_SLACK_MS } from '../../lib/store/follow/waiters.js';

test('the unheld cap is under the 60 s many clients give a call without progress, and the default fits under it', () => {
  assert.ok(UNHELD_MAX_WAIT_MS <= 50_000);
  assert.equal(clampWait(undefined, false), DEFAULT_WAIT_MS);
  // A timer fires a little late: the window leaves room for that, so the answer is out by 50 s.
  assert.equal(clampWait(90_000, false), UNHELD_MAX_WAIT_MS - UNHELD_SLACK_MS);
  assert.equal(clampWait(1e12, false), UNHELD_MAX_WAIT_MS - UNHELD_SLACK_MS);
  assert.equal(clampWait(90_000, true), MAX_WAIT_MS);
  assert.equal(clampWait(1e12, true), MAX_WAIT_MS);
  assert.equal(clampWait(-5, false), 0);
});

/** The window the tool hands the store for a call with these arguments, with or without a progress callback. */
async function windowOf(args: Record<string, unknown>, progress: boolean): Promise<number | undefined> {
  let seen: number | undefined;
  const store = {
    shape: idShape(4),
    agents: {
      wait: async (_agent: string, _filter: unknown, options: { timeoutMs?: number }) => {
        seen = options.timeoutMs;
        return { appeared: [], timedOut: true, waitedMs: 0, cursor: 'relay-0000' };
      },
    },
  } as unknown as RelayStore;
  const grant = { agent: 'ana', depositedBy: 'mcp/ana' } as never;
  // A filter keeps the call off the roster news and the channel, which need a whole store.
  await waitForRelay.run(store, { ...args, to: 'ana' } as never, { grant, signal: new AbortController().signal, ...(progress ? { progress: () => {} } : {}) });
  return seen;
}

test('wait_for_relay without a progress token asks the store for 50 s at most, whatever timeout_ms says; with one, up to 90 s', async () => {
  assert.equal(await windowOf({ timeout_ms: 90_000 }, false), UNHELD_MAX_WAIT_MS - UNHELD_SLACK_MS);
  assert.equal(await windowOf({ timeout_ms: 10_000_000 }, false), UNHELD_MAX_WAIT_MS - UNHELD_SLACK_MS);
  assert.equal(await windowOf({}, false), DEFAULT_WAIT_MS);
  assert.equal(await windowOf({ timeout_ms: 90_000 }, true), MAX_WAIT_MS);
  assert.equal(await windowOf({ timeout_ms: 60_000 }, true), 60_000);
});

test('the hub\'s table of holds says the same window as the tool runs', () => {
  const holds = waitForRelay.door.holdsMs!;
  assert.equal(holds({ timeout_ms: 90_000 }, false), UNHELD_MAX_WAIT_MS - UNHELD_SLACK_MS);
  assert.equal(holds({ timeout_ms: 90_000 }, true), MAX_WAIT_MS);
});

test('the bridge answers a tokenless wait within 50 s: it asks the hub for less, and gives the hub no longer than that', () => {
  const plan = callPlan('wait_for_relay', { timeout_ms: 90_000 }, false);
  assert.ok(plan.timeoutMs < UNHELD_MAX_WAIT_MS);
  assert.equal(plan.firm, true, 'counted from the call\'s arrival, connecting included');
  assert.equal(plan.args?.timeout_ms, UNHELD_MAX_WAIT_MS - UNHELD_TRIP_MS);
  // A short wait is sent as it was asked; the default is made explicit, and is the default.
  assert.equal(callPlan('wait_for_relay', { timeout_ms: 5_000 }, false).args?.timeout_ms, 5_000);
  assert.equal(callPlan('wait_for_relay', {}, false).args?.timeout_ms, DEFAULT_WAIT_MS);
});

test('the bridge forwards a wait with a progress token as asked, and gives the hub its whole window and slack', () => {
  const plan = callPlan('wait_for_relay', { timeout_ms: 90_000 }, true);
  assert.deepEqual(plan.args, { timeout_ms: 90_000 });
  assert.ok(plan.timeoutMs > MAX_WAIT_MS);
  assert.equal(plan.firm, false);
  // A call the hub answers at once keeps its own short timeout either way.
  assert.equal(callPlan('exists', { id: 'relay-0001' }, false).firm, false);
});

test('the description says the two windows in one line, from the same constants', () => {
  const { description } = waitForRelay.contract({ shape: idShape(4) });
  const line = description.split('\n').find((l) => l.includes('progress token'));
  assert.equal(line, `Held ${UNHELD_MAX_WAIT_MS / 1000} s at most without a progress token, ${MAX_WAIT_MS / 1000} s with one.`);
});
