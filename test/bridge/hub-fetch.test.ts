/**
 * The bridge's signing fetch against a real hub on loopback. A new bridge
 * session numbers its requests from 0 again, so its first call can repeat,
 * byte for byte, one an earlier session signed in the same second; the hub
 * takes a signature once and refuses the repeat before running anything.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sign, startTestHub } from '../support/http-helpers.js';
import { bridgeKey } from '../../lib/bridge/bridge-key.js';
import { hubFetch } from '../../lib/bridge/hub-fetch.js';
import { silentLogger } from '../../lib/log.js';

const MCP = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18' };

test('a call whose bytes another session signed this second is signed again in the next, and runs once', async (t) => {
  const h = await startTestHub(t, { agents: ['ana'] });
  const body = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 0 } } });
  const key = bridgeKey(h.keys, 'ana');
  const send = hubFetch(key, { url: h.url, agent: 'ana', keyFile: key.file }, silentLogger);
  const secret = await h.key('ana');
  // Both sends in one second of the clock (ts has a second's grain): start just after a second begins.
  await new Promise((resolve) => setTimeout(resolve, 1005 - (Date.now() % 1000)));
  // The earlier session: the same bytes, signed now, by a plain client.
  const earlier = await fetch(new URL('/mcp', h.url), { method: 'POST', body, headers: { ...MCP, Authorization: sign('ana', secret, 'POST', body) } });
  assert.equal(earlier.status, 200, await earlier.text());
  const started = Date.now();
  const again = await send(new URL('/mcp', h.url), { method: 'POST', body, headers: MCP });
  assert.equal(again.status, 200, `answered, not refused replayed_signature: ${await again.clone().text()}`);
  assert.ok(Date.now() - started <= 1_500, 'within the next second');
});
