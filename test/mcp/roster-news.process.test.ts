/**
 * A named agent learns who else is on the relay from its inbox wait: the
 * first answer of a server says it, later ones only when a name joins
 * (lib/mcp/tools/roster-news.ts). Real named stdio servers on one corpus.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { eventually } from '../support/poll.js';

/** The names waiting now, as `p-e-relay agents --json` says. */
async function waiting(corpus: string): Promise<string[]> {
  const { stdout } = await runCli(['agents', '--corpus', corpus, '--json']);
  return (JSON.parse(stdout) as { agents: { name: string; waiting: boolean }[] }).agents.filter((a) => a.waiting).map((a) => a.name);
}

test('a named wait answers agents (itself left out) on its first call, then who joins, and not in between', async (t) => {
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
  assert.match(first.text, /\nagents here: ana$/m);
  const second = await wait(bob);
  assert.equal(second.structured.agents, undefined);
  assert.doesNotMatch(second.text, /agents here/);

  const carol = (await stdioClient(t, corpus, ['--agent', 'carol'])).client;
  await wait(carol);
  // Only the news: who joined, not the whole roster again.
  const joined = await wait(bob);
  assert.deepEqual(joined.structured.agents?.map((a) => a.name), ['carol']);
  assert.match(joined.text, /\nagents joined or restated \(the others as before\): carol$/m);
});

test('an unnamed server\'s wait never carries agents', async (t) => {
  const { corpus } = await tempStore(t);
  await (await stdioClient(t, corpus, ['--agent', 'ana'])).client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const { client } = await stdioClient(t, corpus);
  const result = await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0, after: 'relay-0000' } });
  assert.equal((result.structuredContent as { agents?: unknown }).agents, undefined);
});

test('a wait its client cancelled does not spend the roster: the next wait still says who is here', async (t) => {
  const { corpus } = await tempStore(t);
  await (await stdioClient(t, corpus, ['--agent', 'ana'])).client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const bob = (await stdioClient(t, corpus, ['--agent', 'bob'])).client;
  const cancel = new AbortController();
  const cancelled = bob.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 60_000 } }, { signal: cancel.signal }).catch(() => 'cancelled');
  await eventually(async () => (await waiting(corpus)).includes('bob'), 'bob\'s wait to be in');
  cancel.abort();
  assert.equal(await cancelled, 'cancelled');
  // The server has ended the cancelled wait (its own answer, which no one reads) before bob calls again.
  await eventually(async () => !(await waiting(corpus)).includes('bob'), 'bob\'s cancelled wait to end', { everyMs: 100 });
  const next = await bob.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  assert.deepEqual((next.structuredContent as { agents?: { name: string }[] }).agents?.map((a) => a.name), ['ana']);
});
