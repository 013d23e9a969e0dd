/**
 * The bridge's tool list: answered from its copy of the hub's, which it
 * fetches once and checks again only after the hub's own ttl, telling the
 * client (list_changed) when the hub's list changed.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { Tool } from '@modelcontextprotocol/client';
import { ToolList } from '../../lib/bridge/tool-list.js';
import type { HubClient } from '../../lib/bridge/hub-client.js';
import { createLogger } from '../../lib/log.js';

const tool = (description: string): Tool => ({ name: 'exists', description, inputSchema: { type: 'object' } });

function fakeHub(ttlMs: number | undefined) {
  const hub = { lists: 0, tools: [tool('one')], listTools: async () => (hub.lists++, { tools: hub.tools, ttlMs }) };
  return hub;
}

test('within the hub\'s ttl the bridge answers tools/list from its copy, without asking the hub', async () => {
  let now = 0;
  const hub = fakeHub(60_000);
  const list = new ToolList(hub as unknown as HubClient, () => {}, createLogger('silent'), () => now);
  assert.deepEqual(await list.current(), [tool('one')]);
  now = 59_999;
  for (let i = 0; i < 5; i++) await list.current();
  assert.equal(hub.lists, 1);
});

test('past the hub\'s ttl the copy answers at once, the hub is asked again, and a changed list is announced', async () => {
  let now = 0;
  let changed = 0;
  const hub = fakeHub(60_000);
  const list = new ToolList(hub as unknown as HubClient, () => changed++, createLogger('silent'), () => now);
  await list.current();
  hub.tools = [tool('two')];
  now = 60_000;
  assert.deepEqual(await list.current(), [tool('one')], 'the copy, at once');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(hub.lists, 2);
  assert.equal(changed, 1, 'list_changed, since the hub\'s list differs');
  assert.deepEqual(await list.current(), [tool('two')]);
  now = 120_000;
  await list.current();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(changed, 1, 'the same list again: nothing to announce');
});

test('a hub that states no ttl (the 2025 era) is checked again after a minute, as every server lets a client cache it', async () => {
  let now = 0;
  const hub = fakeHub(undefined);
  const list = new ToolList(hub as unknown as HubClient, () => {}, createLogger('silent'), () => now);
  await list.current();
  now = 59_000;
  list.hubAnswered();
  assert.equal(hub.lists, 1);
  now = 60_000;
  list.hubAnswered();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(hub.lists, 2);
});
