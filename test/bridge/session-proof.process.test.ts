/**
 * Delivery on proof, the same on every door (spec §8d): a call proves only
 * what its own session was given. Scripted: an answer delivered in a wait,
 * then the agent's process closes cleanly with no later call; the agent's
 * next session has that answer again, through a bridge as over stdio
 * `serve --agent`. Real hub, real bridges and stdio servers, the SDK's
 * client. Run `npm run build` first.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { readKey } from '../../lib/auth/keys.js';
import { SESSION_META } from '../../lib/model/session.js';
import { errorCode, stdioClient, tempStore } from '../support/helpers.js';
import { appendRecord, bridgeClient, hubStore, inboxIds, startHubProcess } from '../support/bridge-helpers.js';
import { httpClient } from '../support/http-helpers.js';

test('through a bridge: an answer delivered in a wait, the bridge closed cleanly with no later call, comes again in the next bridge session', async (t) => {
  const store = await hubStore(t, { agents: ['ana', 'bob'] });
  const hub = await startHubProcess(t, { store });
  const bob = (await bridgeClient(t, hub.url, 'bob', store.keys)).client;
  const first = await bridgeClient(t, hub.url, 'ana', store.keys);
  assert.deepEqual(await inboxIds(first.client, 0), []);

  const q = await appendRecord(bob, { kind: 'question', from: 'bob', to: 'ana' }, 'ready?');
  assert.deepEqual(await inboxIds(first.client, 10_000), [q]);
  await first.client.close(); // a clean end, and no call after the answer

  const second = (await bridgeClient(t, hub.url, 'ana', store.keys)).client;
  assert.deepEqual(await inboxIds(second, 0), [q], 'the new session\'s first call proves nothing the old one was given');
  assert.deepEqual(await inboxIds(second, 0), [], 'its own next call proves it: not a third time');
  const third = (await bridgeClient(t, hub.url, 'ana', store.keys)).client;
  assert.deepEqual(await inboxIds(third, 0), [], 'nor in a later session');
});

test('over stdio: two serve --agent servers of one agent, one after the other, behave the same', async (t) => {
  const { corpus } = await tempStore(t);
  const bob = (await stdioClient(t, corpus, ['--agent', 'bob'])).client;
  const first = (await stdioClient(null, corpus, ['--agent', 'ana'])).client;
  assert.deepEqual(await inboxIds(first, 0), []);
  const q = await appendRecord(bob, { kind: 'question', from: 'bob', to: 'ana' }, 'ready?');
  assert.deepEqual(await inboxIds(first, 10_000), [q]);
  await first.close();
  const second = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  assert.deepEqual(await inboxIds(second, 0), [q]);
  assert.deepEqual(await inboxIds(second, 0), []);
});

test('on the hub, a call proves only its own session\'s answers; calls that name no session are one session (a client signing directly)', async (t) => {
  const store = await hubStore(t, { agents: ['ana', 'bob'] });
  const hub = await startHubProcess(t, { store });
  const bob = await httpClient(t as never, hub.url, { agent: 'bob', key: (await readKey(store.keys, 'bob'))! });
  const ana = await httpClient(t as never, hub.url, { agent: 'ana', key: (await readKey(store.keys, 'ana'))! });
  const s1 = { [SESSION_META]: 'session-one-aaaa' };
  const s2 = { [SESSION_META]: 'session-two-bbbb' };
  assert.deepEqual(await inboxIds(ana, 0), []);

  const q1 = await appendRecord(bob, { kind: 'question', from: 'bob', to: 'ana' }, 'one?');
  assert.deepEqual(await inboxIds(ana, 0, s1), [q1]);
  assert.deepEqual(await inboxIds(ana, 0, s2), [q1], 'another session\'s call proves nothing of s1');
  assert.deepEqual(await inboxIds(ana, 0), [q1], 'nor does a call that names none');
  assert.deepEqual(await inboxIds(ana, 0), [], 'the unnamed session\'s own next call proves what it was given');

  const q2 = await appendRecord(bob, { kind: 'question', from: 'bob', to: 'ana' }, 'two?');
  assert.deepEqual(await inboxIds(ana, 0, s1), [q2]);
  assert.deepEqual(await inboxIds(ana, 0, s1), [], 's1\'s next call proves it');
});

test('a session id that is not one is refused bad_session, and proves nothing', async (t) => {
  const store = await hubStore(t, { agents: ['ana', 'bob'] });
  const hub = await startHubProcess(t, { store });
  const bob = await httpClient(t as never, hub.url, { agent: 'bob', key: (await readKey(store.keys, 'bob'))! });
  const ana = await httpClient(t as never, hub.url, { agent: 'ana', key: (await readKey(store.keys, 'ana'))! });
  assert.deepEqual(await inboxIds(ana, 0), []);
  const q = await appendRecord(bob, { kind: 'question', from: 'bob', to: 'ana' }, 'one?');
  assert.deepEqual(await inboxIds(ana, 0), [q]);
  for (const bad of ['short', 'has space in it', 'x'.repeat(65), 42]) {
    const r = (await ana.callTool({ name: 'exists', arguments: { id: q }, _meta: { [SESSION_META]: bad } })) as CallToolResult;
    assert.equal(errorCode(r), 'bad_session', String(bad));
  }
  // Had a refused call counted as the unnamed session's, its answer would be proved, and no session would have it again.
  assert.deepEqual(await inboxIds(ana, 0, { [SESSION_META]: 'session-one-aaaa' }), [q], 'the refused calls proved nothing');
});
