/**
 * Provenance in the loop (a review's cases, spec §8d): a forged
 * answer, a poisoned catch-up and broadcasts born "already answered", each
 * run against real doors: the hub over loopback with real signatures, named
 * and unnamed stdio servers on one corpus.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { errorCode, record, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { httpClient, startTestHub } from '../support/http-helpers.js';

interface Item { id: string; kind: string | null; from: string | null; answers?: number }

async function append(client: Client, headers: Record<string, string>, body = 'text'): Promise<CallToolResult> {
  return (await client.callTool({ name: 'append_relay', arguments: { bytes: record(headers, body) } })) as CallToolResult;
}

function idOf(r: CallToolResult): string {
  assert.notEqual(r.isError, true, textOf(r));
  return (r.structuredContent as { id: string }).id;
}

async function items(client: Client, args: Record<string, unknown>): Promise<Item[]> {
  const r = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 5000, ...args } })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return (r.structuredContent as { appeared: Item[] }).appeared;
}

test('forged answer: carol cannot sign an answer from: bob, so ana never takes it for bob\'s', async (t) => {
  const hub = await startTestHub(t, { agents: ['ana', 'bob', 'carol'] });
  const [ana, carol] = await Promise.all(['ana', 'carol'].map(async (agent) => httpClient(t, hub.url, { agent, key: await hub.key(agent) })));
  const q = idOf(await append(ana!, { kind: 'question', from: 'ana', to: 'bob' }, 'is the bridge safe?'));
  const forged = await append(carol!, { kind: 'answer', from: 'bob', to: 'ana', parent: q }, 'yes, cross it');
  assert.equal(errorCode(forged), 'from_mismatch');
  assert.deepEqual(await items(ana!, { replies_to: q, after: q, timeout_ms: 0 }), [], 'nothing answers it');
});

test('poisoned catch-up: answers forged from: ana by an unnamed server do not keep a named ana from her question', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  const stranger = (await stdioClient(t, corpus)).client;
  const planner = (await stdioClient(t, corpus, ['--agent', 'planner'])).client;
  await ana.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } });
  const q = idOf(await append(planner, { kind: 'question', from: 'planner', to: 'ana' }, 'route?'));
  // What poisoned the old recipe's catch-up (from: ana): "her" answer to q, so she never answered it.
  idOf(await append(stranger, { kind: 'answer', from: 'ana', to: 'planner', parent: q }, 'done already'));
  const got = await items(ana, {});
  assert.deepEqual(got.map((i) => i.id), [q], 'ana is given the question, with no catch-up to poison');
  // And a named server cannot write the forgery at all.
  assert.equal(errorCode(await append(planner, { kind: 'answer', from: 'ana', to: 'planner', parent: q })), 'from_mismatch');
});

test('born answered: answers citing ids before their question exists do not count, and a Question in any case gets a count', async (t) => {
  const hub = await startTestHub(t, { agents: ['mallory', 'ana', 'bob'] });
  const [mallory, ana, bob] = await Promise.all(['mallory', 'ana', 'bob'].map(async (agent) => httpClient(t, hub.url, { agent, key: await hub.key(agent) })));
  // Answers to relay-0004 … relay-0006 before any of them exists.
  for (const future of ['relay-0004', 'relay-0005', 'relay-0006']) idOf(await append(mallory!, { kind: 'answer', from: 'mallory', to: 'all', parent: future }, 'pre-answered'));
  await items(bob!, { timeout_ms: 0 });
  const broadcasts = [];
  for (const kind of ['question', 'Question', 'QUESTION']) broadcasts.push(idOf(await append(ana!, { kind, from: 'ana', to: 'all' }, 'who knows?')));
  assert.deepEqual(broadcasts, ['relay-0004', 'relay-0005', 'relay-0006']);
  const before = await items(bob!, {});
  assert.deepEqual(before.map((i) => [i.id, i.answers]), broadcasts.map((id) => [id, 0]), 'born unanswered');
  idOf(await append(bob!, { kind: 'Answer', from: 'bob', to: 'ana', parent: broadcasts[0]! }, 'I do'));
  const counted = await items(bob!, { after: 'relay-0003', to: 'all', timeout_ms: 0 });
  assert.deepEqual(counted.map((i) => [i.id, i.answers]), [[broadcasts[0], 1], [broadcasts[1], 0], [broadcasts[2], 0]], 'a later Answer counts');
});

test('an answer whose from: is not its verified depositor (a record from before from_mismatch) is not counted', async (t) => {
  const hub = await startTestHub(t, { agents: ['ana'] });
  const ana = await httpClient(t, hub.url, { agent: 'ana', key: await hub.key('ana') });
  const q = idOf(await append(ana, { kind: 'question', from: 'ana', to: 'all' }));
  // Written straight into the store as an older hub would have taken it: signed by carol, claiming bob.
  await hub.store.append(Buffer.from(record({ kind: 'answer', from: 'bob', to: 'ana', parent: q })), { depositedBy: 'mcp/carol' });
  await hub.store.append(Buffer.from(record({ kind: 'answer', from: 'dave', to: 'ana', parent: q })), { depositedBy: 'cli/operator' });
  const [item] = await items(ana, { after: 'relay-0000', kind: 'question', timeout_ms: 0 });
  assert.equal(item!.answers, 1, 'the unverifiable CLI answer counts as before; the forged signed one does not');
});
