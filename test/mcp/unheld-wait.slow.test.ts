/**
 * A wait that fits its client (spec §8), in real time on every door: a
 * wait_for_relay with no progress token and timeout_ms 90000 is answered
 * within 50 s by a stdio server, the hub's /mcp and the bridge; through the
 * bridge, a call with a progress token runs past 50 s, kept alive by the
 * progress the bridge relays; and a bridge whose hub has stopped answering
 * (SIGSTOP) refuses a tokenless wait hub_timeout within 50 s. Its own file: it takes ~55 s, the four waits
 * side by side. Run `npm run build` first.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { readKey } from '../../lib/auth/keys.js';
import { UNHELD_MAX_WAIT_MS } from '../../lib/store/follow/waiters.js';
import { errorCode, record, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { bridgeClient, startHubProcess } from '../support/bridge-helpers.js';
import { httpClient } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';

interface Waited {
  elapsedMs: number;
  result: CallToolResult;
}

/** A tokenless wait of 90 s: the SDK sends no progress token when the call asks for no progress. */
async function unheld(client: Client): Promise<Waited> {
  const started = Date.now();
  const result = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 90_000, to: 'nobody-here' } }, { timeout: 80_000 })) as CallToolResult;
  return { elapsedMs: Date.now() - started, result };
}

function assertAnsweredWithin50s(door: string, { elapsedMs, result }: Waited): void {
  assert.notEqual(result.isError, true, `${door}: ${textOf(result)}`);
  const { timedOut, waitedMs } = result.structuredContent as { timedOut: boolean; waitedMs: number };
  assert.equal(timedOut, true, door);
  assert.ok(waitedMs <= UNHELD_MAX_WAIT_MS, `${door}: the relay waited ${waitedMs} ms`);
  assert.ok(waitedMs >= UNHELD_MAX_WAIT_MS - 5_000, `${door}: it waited as long as it could (${waitedMs} ms)`);
  assert.ok(elapsedMs <= UNHELD_MAX_WAIT_MS, `${door}: the client had its answer after ${elapsedMs} ms`);
}

test('a 90 s wait with no progress token is answered within 50 s on stdio, /mcp and the bridge; with a token the bridge runs past it', async (t) => {
  const { corpus } = await tempStore(t);
  const stdio = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  const hub = await startHubProcess(t, { agents: ['ana', 'bob', 'cy'] });
  const http = await httpClient(t as never, hub.url, { agent: 'bob', key: (await readKey(hub.keys, 'bob'))! });
  const bridge = (await bridgeClient(t, hub.url, 'cy', hub.keys)).client;
  const kept = (await bridgeClient(t, hub.url, 'ana', hub.keys)).client;
  const frozenHub = await startHubProcess(t, { agents: ['dee'] });
  const toFrozen = (await bridgeClient(t, frozenHub.url, 'dee', frozenHub.keys)).client;
  await toFrozen.callTool({ name: 'exists', arguments: { id: 'relay-0001' } }); // connected to the hub before it stops
  frozenHub.child.kill('SIGSTOP');
  t.after(() => void frozenHub.child.kill('SIGCONT')); // before its stop runs: a stopped process takes no SIGTERM

  const progress: number[] = [];
  const started = Date.now();
  const long = kept.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 90_000 } }, {
    timeout: 15_000, // only progress keeps it alive past this
    resetTimeoutOnProgress: true,
    onprogress: (p) => progress.push(p.progress),
  }) as Promise<CallToolResult>;
  const [onStdio, onHttp, onBridge, onFrozen] = await Promise.all([unheld(stdio), unheld(http), unheld(bridge), unheld(toFrozen)]);
  assertAnsweredWithin50s('stdio serve', onStdio);
  assertAnsweredWithin50s('/mcp', onHttp);
  assertAnsweredWithin50s('bridge', onBridge);
  frozenHub.child.kill('SIGCONT');
  assert.equal(errorCode(onFrozen.result), 'hub_timeout', textOf(onFrozen.result));
  assert.ok(onFrozen.elapsedMs <= UNHELD_MAX_WAIT_MS, `a silent hub: the bridge answered after ${onFrozen.elapsedMs} ms`);

  // Past the unheld cap, the wait with a token is still open; a record for ana ends it.
  await eventually(() => Date.now() - started > UNHELD_MAX_WAIT_MS + 2_000, 'the 50 s to pass', { timeoutMs: 60_000 });
  const sent = (await http.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'bob', to: 'ana' }, 'late') } })) as CallToolResult;
  assert.notEqual(sent.isError, true, textOf(sent));
  const result = await long;
  assert.notEqual(result.isError, true, textOf(result));
  assert.deepEqual((result.structuredContent as { appeared: { from: string }[] }).appeared.map((a) => a.from), ['bob']);
  assert.ok(progress.length >= 4, `progress kept it alive (${progress.length} notifications)`);
});
