/**
 * The relay keeps a named agent's place (spec §8d), with real processes:
 * named stdio servers spawned by the real SDK client over real pipes, all
 * on one corpus. No client here passes after or keeps a cursor; a server is
 * killed with SIGKILL where a crash is the point, closed by ending its
 * stdin or sent SIGTERM where a clean stop is.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { record, stdioClient, tempStore, textOf } from '../../support/helpers.js';

interface Item { id: string; kind: string | null; from: string | null; answers?: number }
interface Waited { appeared: Item[]; timedOut: boolean; cursor: string }

async function named(t: TestContext | null, corpus: string, agent: string): Promise<{ client: Client; transport: StdioClientTransport }> {
  return stdioClient(t, corpus, ['--agent', agent]);
}

async function append(client: Client, headers: Record<string, string>, body = 'text'): Promise<string> {
  const r = (await client.callTool({ name: 'append_relay', arguments: { bytes: record(headers, body) } })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return (r.structuredContent as { id: string }).id;
}

async function wait(client: Client, args: Record<string, unknown> = {}): Promise<Waited> {
  const r = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 10_000, ...args } })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return r.structuredContent as unknown as Waited;
}

const idsOf = (w: Waited) => w.appeared.map((a) => a.id);

test('two named servers ask and answer by name, with no cursor in either client', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const bob = (await named(t, corpus, 'bob')).client;
  await wait(ana, { timeout_ms: 0 }); // ana has started
  const q = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'what is 6 x 7?');
  const got = await wait(bob);
  assert.deepEqual(idsOf(got), [q]);
  const a = await append(bob, { kind: 'answer', from: 'bob', to: 'ana', parent: q }, '42');
  assert.deepEqual(idsOf(await wait(ana)), [a], 'ana gets the answer, not her own question');
  assert.deepEqual(idsOf(await wait(ana, { timeout_ms: 0 })), [], 'and nothing twice');
  assert.deepEqual(idsOf(await wait(bob, { timeout_ms: 0 })), [], 'bob is not given his own answer, nor the question again');
});

test('killed between its answer and its next call, the server gives the question once more; the answer lands once', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const q = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'ping?');
  const first = await named(null, corpus, 'bob');
  assert.deepEqual(idsOf(await wait(first.client)), [q]);
  const a1 = await append(first.client, { kind: 'answer', from: 'bob', to: 'ana', parent: q }, 'pong');
  // The append proved the wait's delivery; the answer to the append is the last thing said. Now a crash.
  assert.deepEqual(idsOf(await wait(first.client, { timeout_ms: 0 })), []);
  const second = await named(null, corpus, 'bob');
  t.after(() => second.client.close());
  process.kill(first.transport.pid!, 'SIGKILL');
  await first.client.close().catch(() => {});
  // Killed before its next call proved the last (empty) wait: nothing was pending, so nothing comes back.
  assert.deepEqual(idsOf(await wait(second.client, { timeout_ms: 0 })), []);
  const answers = (await wait(ana)).appeared;
  assert.deepEqual(answers.map((x) => x.id), [a1]);

  // Now the crash that matters: between a wait's answer and the next call.
  const q2 = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'ping again?');
  assert.deepEqual(idsOf(await wait(second.client)), [q2]);
  process.kill(second.transport.pid!, 'SIGKILL');
  await second.client.close().catch(() => {});
  const third = (await named(t, corpus, 'bob')).client;
  const again = await wait(third, { timeout_ms: 0 });
  assert.deepEqual(idsOf(again), [q2], 'delivered once more, never lost');
  const answer = record({ kind: 'answer', from: 'bob', to: 'ana', parent: q2 }, 'pong again');
  const r1 = (await third.callTool({ name: 'append_relay', arguments: { bytes: answer } })) as CallToolResult;
  const r2 = (await third.callTool({ name: 'append_relay', arguments: { bytes: answer } })) as CallToolResult;
  assert.equal((r2.structuredContent as { id: string; replayed?: true }).id, (r1.structuredContent as { id: string }).id);
  assert.deepEqual(idsOf(await wait(third, { timeout_ms: 0 })), [], 'not a third time');
  assert.deepEqual(idsOf(await wait(ana)), [(r1.structuredContent as { id: string }).id], 'ana gets one answer');
});

test('a question delivered and never acknowledged comes again after its server closes cleanly', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const q = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'once?');
  const first = await named(null, corpus, 'bob');
  assert.deepEqual(idsOf(await wait(first.client)), [q]);
  await first.client.close(); // ends its stdin: a clean close, with no later call to prove the answer was read
  const second = (await named(t, corpus, 'bob')).client;
  assert.deepEqual(idsOf(await wait(second, { timeout_ms: 0 })), [q], 'a clean close is no proof');
  assert.deepEqual(idsOf(await wait(second, { timeout_ms: 0 })), [], 'the later call proved it: not a third time');
});

test('a question delivered and never acknowledged comes again after its server is sent SIGTERM', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const q = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'once?');
  const first = await named(null, corpus, 'bob');
  assert.deepEqual(idsOf(await wait(first.client)), [q]);
  const exited = new Promise((resolve) => first.transport.onclose = () => resolve(undefined));
  process.kill(first.transport.pid!, 'SIGTERM');
  await exited;
  await first.client.close().catch(() => {});
  const second = (await named(t, corpus, 'bob')).client;
  assert.deepEqual(idsOf(await wait(second, { timeout_ms: 0 })), [q]);
});

test('a filter set first used after a broadcast still gets it: a new set starts at the agent\'s first start', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  await append(ana, { kind: 'question', from: 'ana', to: 'all' }, 'before bob');
  const bob = (await named(t, corpus, 'bob')).client;
  assert.deepEqual(idsOf(await wait(bob, { timeout_ms: 0 })), [], 'bob has started');
  const between = await append(ana, { kind: 'question', from: 'ana', to: 'all' }, 'after bob started');
  // A set bob never used before: its first use comes after the broadcast.
  assert.deepEqual(idsOf(await wait(bob, { kind: 'question', timeout_ms: 0 })), [between]);
  assert.match(await readFile(path.join(corpus, '.state', 'marks', 'bob', '.start'), 'utf8'), /^relay-0001\n$/);
});

test('receipts never name a newcomer for a broadcast from before its first start, even once its mark has passed it', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const old = await append(ana, { kind: 'question', from: 'ana', to: 'all' }, 'before bob');
  const bob = (await named(t, corpus, 'bob')).client;
  assert.deepEqual(idsOf(await wait(bob, { timeout_ms: 0 })), []);
  const fresh = await append(ana, { kind: 'question', from: 'ana', to: 'all' }, 'after bob started');
  assert.deepEqual(idsOf(await wait(bob)), [fresh]);
  await wait(bob, { timeout_ms: 0 }); // proves it: the mark passes both broadcasts
  const mark = await readFile(path.join(corpus, '.state', 'marks', 'bob', 'to=all,bob'), 'utf8');
  assert.match(mark, new RegExp(`^${fresh}\\nnamed-only-through: ${old}\\n`), 'the mark keeps its start');
  const receipt = async (id: string) => {
    const r = (await ana.callTool({ name: 'list_replies', arguments: { id } })) as CallToolResult;
    return (r.structuredContent as { deliveredTo?: string[] }).deliveredTo;
  };
  assert.deepEqual(await receipt(old), []);
  assert.deepEqual(await receipt(fresh), ['bob']);
});

test('a question to bob from before bob first started reaches him; a broadcast from before does not', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const toBob = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'for bob');
  await append(ana, { kind: 'question', from: 'ana', to: 'all' }, 'old broadcast');
  const bob = (await named(t, corpus, 'bob')).client;
  assert.deepEqual(idsOf(await wait(bob, { timeout_ms: 0 })), [toBob]);
  const fresh = await append(ana, { kind: 'question', from: 'ana', to: 'all' }, 'new broadcast');
  assert.deepEqual(idsOf(await wait(bob)), [fresh], 'a broadcast after his start does');
  const history = await wait(bob, { after: 'relay-0000', to: 'all', timeout_ms: 0 });
  assert.equal(history.appeared.length, 2, 'with after, history is still there');
});

test('a wait with its own filters keeps that filter set\'s own mark', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const bob = (await named(t, corpus, 'bob')).client;
  await wait(bob, { timeout_ms: 0 });
  const note = await append(ana, { kind: 'note', from: 'ana', to: 'bob' });
  const question = await append(ana, { kind: 'question', from: 'ana', to: 'bob' });
  assert.deepEqual(idsOf(await wait(bob, { kind: 'question' })), [question]);
  assert.deepEqual(idsOf(await wait(bob, { timeout_ms: 0 })), [note, question], 'the default set has its own mark');
  assert.deepEqual(idsOf(await wait(bob, { kind: 'question', timeout_ms: 0 })), []);
  const marks = path.join(corpus, '.state', 'marks', 'bob');
  assert.match(await readFile(path.join(marks, 'to=all,bob'), 'utf8'), /^relay-0002\n/);
  assert.match(await readFile(path.join(marks, 'kind=question'), 'utf8'), /^relay-0002\n/);
});

test('two servers of one agent at once: each session is given the record, and neither again once proved', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = (await named(t, corpus, 'ana')).client;
  const bob1 = (await named(t, corpus, 'bob')).client;
  const bob2 = (await named(t, corpus, 'bob')).client;
  await Promise.all([wait(bob1, { timeout_ms: 0 }), wait(bob2, { timeout_ms: 0 })]);
  const both = [wait(bob1), wait(bob2)];
  const q = await append(ana, { kind: 'question', from: 'ana', to: 'bob' });
  const [one, two] = (await Promise.all(both)) as [Waited, Waited];
  assert.deepEqual([idsOf(one), idsOf(two)], [[q], [q]]);
  assert.deepEqual(idsOf(await wait(bob1, { timeout_ms: 0 })), []);
  assert.deepEqual(idsOf(await wait(bob2, { timeout_ms: 0 })), []);
  assert.match(await readFile(path.join(corpus, '.state', 'marks', 'bob', 'to=all,bob'), 'utf8'), new RegExp(`^${q}\\n`));
});
