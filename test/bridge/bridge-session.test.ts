/**
 * The bridge's session on the hub (bridge-session.ts): every forwarded call
 * names it, and a wait whose answer may not have reached the client makes
 * the bridge go on as a new session, so none of its later calls proves what
 * the client never had. The hub is a stub here: what matters is what the
 * bridge sends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolRequest, ServerContext } from '@modelcontextprotocol/server';
import { BridgeSession } from '../../lib/bridge/bridge-session.js';
import { forwardCall } from '../../lib/bridge/forward-call.js';
import type { HubClient } from '../../lib/bridge/hub-client.js';
import type { ToolList } from '../../lib/bridge/tool-list.js';
import { RelayError } from '../../lib/errors.js';
import { SESSION_META } from '../../lib/model/session.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} } as never;

/** A bridge's forwarder over a stub hub that records each call's session and fails the calls `fails` says. */
function bridge(fails: (name: string) => boolean) {
  const sent: { name: string; session: unknown }[] = [];
  const hub = {
    run: async (_scope: unknown, _timeoutMs: number, use: (client: unknown) => Promise<unknown>) =>
      use({
        callTool: async (params: { name: string; _meta?: Record<string, unknown> }) => {
          sent.push({ name: params.name, session: params._meta?.[SESSION_META] });
          if (fails(params.name)) throw new RelayError('hub_timeout', 'The hub did not answer.');
          return { content: [{ type: 'text', text: 'ok' }] };
        },
      }),
  } as unknown as HubClient;
  const tools = { hubList: null, hubAnswered() {} } as unknown as ToolList;
  const forward = forwardCall({ hub, tools, log: silent, agent: 'ana', session: new BridgeSession() });
  const ctx = { mcpReq: { signal: new AbortController().signal, notify: async () => {} } } as unknown as ServerContext;
  const call = (name: string, args: Record<string, unknown> = {}) => forward({ method: 'tools/call', params: { name, arguments: args } } as CallToolRequest, ctx);
  return { sent, call };
}

test('every forwarded call names the bridge\'s session, one id for the life of the bridge', async () => {
  const { sent, call } = bridge(() => false);
  await call('exists', { id: 'relay-0001' });
  await call('wait_for_relay', { timeout_ms: 0 });
  await call('append_relay', { bytes: '@p-e/x0\n\nx' });
  assert.match(String(sent[0]!.session), /^[A-Za-z0-9_-]{22}$/);
  assert.deepEqual(new Set(sent.map((s) => s.session)).size, 1);
});

test('an inbox wait that fails on its way back makes the bridge a new session; another call that fails does not', async () => {
  let failing = ['wait_for_relay'];
  const { sent, call } = bridge((name) => failing.includes(name));
  await call('exists', { id: 'relay-0001' });
  const lost = await call('wait_for_relay', { timeout_ms: 0 });
  assert.equal(lost.isError, true);
  await call('exists', { id: 'relay-0001' });
  assert.notEqual(sent[2]!.session, sent[1]!.session, 'the next call proves nothing the lost answer held');
  failing = ['exists', 'wait_for_relay'];
  assert.equal((await call('exists', { id: 'relay-0001' })).isError, true);
  // A read of history that fails: it moves no mark, so nothing of it is pending and nothing is lost.
  assert.equal((await call('wait_for_relay', { after: 'relay-0000', timeout_ms: 0 })).isError, true);
  failing = [];
  await call('exists', { id: 'relay-0001' });
  assert.equal(sent[5]!.session, sent[2]!.session);
});
