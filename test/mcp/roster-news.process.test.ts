/**
 * A named agent learns who else is on the relay from its inbox wait: the
 * first answer of a server says it, later ones only when a name joins
 * (lib/mcp/tools/roster-news.ts). Real named stdio servers on one corpus.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stdioClient, tempStore, textOf } from '../support/helpers.js';

test('a named wait answers agents (itself left out) on its first call and when a name joins, and not in between', async (t) => {
  const { corpus } = await tempStore(t);
  const wait = async (client: Awaited<ReturnType<typeof stdioClient>>['client']) => {
    const result = await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
    return { structured: result.structuredContent as { agents?: { name: string; waiting: boolean }[] }, text: textOf(result) };
  };
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  await wait(ana);
  const bob = (await stdioClient(t, corpus, ['--agent', 'bob'])).client;
  const first = await wait(bob);
  assert.deepEqual(first.structured.agents?.map((a) => a.name), ['ana']);
  assert.match(first.text, /\nagents here: ana$/);
  const second = await wait(bob);
  assert.equal(second.structured.agents, undefined);
  assert.doesNotMatch(second.text, /agents here/);

  const carol = (await stdioClient(t, corpus, ['--agent', 'carol'])).client;
  await wait(carol);
  assert.deepEqual((await wait(bob)).structured.agents?.map((a) => a.name), ['ana', 'carol']);
});

test('an unnamed server\'s wait never carries agents', async (t) => {
  const { corpus } = await tempStore(t);
  await (await stdioClient(t, corpus, ['--agent', 'ana'])).client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const { client } = await stdioClient(t, corpus);
  const result = await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0, after: 'relay-0000' } });
  assert.equal((result.structuredContent as { agents?: unknown }).agents, undefined);
});
