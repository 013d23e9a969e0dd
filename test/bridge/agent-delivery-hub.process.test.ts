/**
 * A named agent's place kept by the hub (spec §8d): real `serve --http`
 * processes on one corpus, agents reaching it through real `bridge`
 * processes (the real SDK client over stdio to each), no cursor in any
 * client. Over HTTP the name is the signing agent, and an answer is pending
 * in the hub until that agent's next call; the hub is killed with SIGKILL
 * where a crash is the point and stopped with SIGTERM where a clean stop is.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { record, textOf } from '../support/helpers.js';
import { bridgeClient, hubStore, startHubProcess } from '../support/bridge-helpers.js';

async function append(client: Client, headers: Record<string, string>, body = 'text'): Promise<string> {
  const r = (await client.callTool({ name: 'append_relay', arguments: { bytes: record(headers, body) } })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return (r.structuredContent as { id: string }).id;
}

async function waitIds(client: Client, timeout_ms = 10_000): Promise<string[]> {
  const r = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms } })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return (r.structuredContent as { appeared: { id: string }[] }).appeared.map((a) => a.id);
}

test('through the hub and two bridges: ask and answer by name, a crash or a clean stop before the proof redelivers once', async (t) => {
  // Cleanups run last registered first: the bridges close, then every hub stops, and only then is the store removed.
  const cleanups: (() => unknown)[] = [];
  const later = { after: (fn: () => unknown) => void cleanups.push(fn) };
  t.after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  const store = await hubStore(later, { agents: ['ana', 'bob'] });
  const first = await startHubProcess(later, { store });
  const ana = (await bridgeClient(later, first.url, 'ana', store.keys)).client;
  const bob = (await bridgeClient(later, first.url, 'bob', store.keys)).client;
  await waitIds(ana, 0);
  await waitIds(bob, 0);

  const q1 = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'first?');
  assert.deepEqual(await waitIds(bob), [q1]);
  const a1 = await append(bob, { kind: 'answer', from: 'bob', to: 'ana', parent: q1 }, 'yes');
  assert.deepEqual(await waitIds(ana), [a1]);

  // A crash between bob's wait answer and his next call: the hub never saw the proof.
  const q2 = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'second?');
  assert.deepEqual(await waitIds(bob), [q2]);
  first.child.kill('SIGKILL');
  await first.stop();
  const second = await startHubProcess(later, { store, port: first.port });
  assert.deepEqual(await waitIds(bob, 0), [q2], 'delivered once more, never lost');
  const a2 = await append(bob, { kind: 'answer', from: 'bob', to: 'ana', parent: q2 }, 'yes again');
  assert.equal(await append(bob, { kind: 'answer', from: 'bob', to: 'ana', parent: q2 }, 'yes again'), a2, 'answered once: the key is the question\'s');
  assert.deepEqual(await waitIds(bob, 0), [], 'not a third time');

  // A clean stop right after a wait's answer is no proof that bob read it: it comes again, once.
  const q3 = await append(ana, { kind: 'question', from: 'ana', to: 'bob' }, 'third?');
  assert.deepEqual(await waitIds(bob), [q3]);
  await second.stop();
  await startHubProcess(later, { store, port: first.port });
  assert.deepEqual(await waitIds(bob, 0), [q3], 'a question delivered and never acknowledged comes again after a clean stop');
  assert.deepEqual(await waitIds(bob, 0), [], 'and not a third time');
  assert.deepEqual(await waitIds(ana, 0), [a2], 'ana has each answer once');
});

test('over the hub, a mark that cannot be used is refused naming it from the corpus, never by the hub\'s absolute path', async (t) => {
  const cleanups: (() => unknown)[] = [];
  const later = { after: (fn: () => unknown) => void cleanups.push(fn) };
  t.after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  const store = await hubStore(later, { agents: ['bob'] });
  const hub = await startHubProcess(later, { store });
  const bob = (await bridgeClient(later, hub.url, 'bob', store.keys)).client;
  await waitIds(bob, 0);
  const dir = path.join(store.corpus, '.state', 'marks', 'bob');
  await mkdir(dir, { recursive: true });
  await rm(path.join(dir, 'to=all,bob'), { force: true });
  await symlink('/dev/zero', path.join(dir, 'to=all,bob'));
  const refused = (await bob.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } })) as CallToolResult;
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /\.state\/marks\/bob\/to=all,bob cannot be used: it is a symbolic link/);
  assert.ok(!textOf(refused).includes(path.dirname(store.corpus)), textOf(refused));
  const other = (await bob.callTool({ name: 'exists', arguments: { id: 'relay-0001' } })) as CallToolResult;
  assert.notEqual(other.isError, true, 'only the call that needs that mark is refused');
});
