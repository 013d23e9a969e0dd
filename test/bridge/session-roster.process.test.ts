/**
 * Who is here, once per session on every door: a real hub and real bridge
 * processes. The hub tells each agent the roster once per hub process; a
 * bridge session that starts anew (a restarted host, whose model remembers
 * nothing) still gets it with its first inbox answer, as a new stdio
 * server's session does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { addKey } from '../../lib/auth/keys.js';
import { record, textOf } from '../support/helpers.js';
import { bridgeClient, hubStore, startHubProcess } from '../support/bridge-helpers.js';

type Here = { name: string; waiting: boolean; about?: string }[] | undefined;

async function inbox(client: Client, args: Record<string, unknown> = { timeout_ms: 0 }): Promise<{ agents: Here; text: string }> {
  const r = (await client.callTool({ name: 'wait_for_relay', arguments: args })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return { agents: (r.structuredContent as { agents?: Here }).agents, text: textOf(r) };
}

test('a new bridge session gets who is here with its first inbox answer, though the hub told that agent before', async (t) => {
  const store = await hubStore(t, { agents: ['ana', 'bob'] });
  const hub = await startHubProcess(t, { store });
  const bob = (await bridgeClient(t, hub.url, 'bob', store.keys)).client;
  const stated = (await bob.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'about', from: 'bob' }, 'knows the launch codes') } })) as CallToolResult;
  assert.notEqual(stated.isError, true, textOf(stated));

  const first = await bridgeClient(t, hub.url, 'ana', store.keys);
  const told = await inbox(first.client);
  assert.deepEqual(told.agents?.map((a) => [a.name, a.about]), [['bob', 'knows the launch codes']], 'the first session is told by the hub');
  assert.equal((await inbox(first.client)).agents, undefined, 'and not again in that session: nothing changed');
  await first.client.close();

  const again = await bridgeClient(t, hub.url, 'ana', store.keys);
  const restarted = await inbox(again.client);
  assert.deepEqual(restarted.agents?.map((a) => [a.name, a.about]), [['bob', 'knows the launch codes']], 'a new session is told again');
  assert.match(restarted.text, /agents here: bob .*"knows the launch codes"/);
  assert.equal((await inbox(again.client)).agents, undefined, 'once');
});

test('a new bridge session whose first hub answer is news of one name gets the whole roster, not that name alone', async (t) => {
  const store = await hubStore(t, { agents: ['ana', 'bob'] });
  const hub = await startHubProcess(t, { store });
  await (await bridgeClient(t, hub.url, 'bob', store.keys)).client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const first = await bridgeClient(t, hub.url, 'ana', store.keys);
  assert.deepEqual((await inbox(first.client)).agents?.map((a) => a.name), ['bob']);
  await first.client.close();
  // carol joins: the hub's next answer to ana is news of carol alone, since it told ana of bob before.
  await addKey(store.keys, 'carol');
  await (await bridgeClient(t, hub.url, 'carol', store.keys)).client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const again = await bridgeClient(t, hub.url, 'ana', store.keys);
  const restarted = await inbox(again.client);
  assert.deepEqual(restarted.agents?.map((a) => a.name), ['bob', 'carol'], 'a new session is told everyone');
  assert.match(restarted.text, /\nagents here: bob(?: \(waiting\))?, carol(?: \(waiting\))?$/m);
  assert.doesNotMatch(restarted.text, /joined or restated/);
});

test('a read of history or a filtered wait through the bridge gets no roster added', async (t) => {
  const store = await hubStore(t, { agents: ['ana', 'bob'] });
  const hub = await startHubProcess(t, { store });
  await (await bridgeClient(t, hub.url, 'bob', store.keys)).client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const ana = (await bridgeClient(t, hub.url, 'ana', store.keys)).client;
  assert.equal((await inbox(ana, { after: 'relay-0000', timeout_ms: 0 })).agents, undefined, 'a read of history');
  assert.equal((await inbox(ana, { kind: 'question', timeout_ms: 0 })).agents, undefined, 'a narrower set');
  assert.deepEqual((await inbox(ana)).agents?.map((a) => a.name), ['bob'], 'the inbox still gets it');
});
