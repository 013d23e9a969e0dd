/**
 * Pending proof per session (spec §8d), in one store: a call proves only
 * what its own session was given, and a store keeps at most
 * MAX_PENDING_SESSIONS sessions of one agent pending (a session that ended
 * before its proof is never heard from again).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_PENDING_SESSIONS } from '../../../lib/store/agents/deliveries.js';
import { openTempStore, record } from '../../support/helpers.js';

test('past MAX_PENDING_SESSIONS sessions of one agent, the first given is forgotten: its next call proves nothing, a later one\'s does', async (t) => {
  const store = await openTempStore(t);
  await store.agents.seen('ana');
  const { id } = await store.append(Buffer.from(record({ kind: 'question', from: 'op', to: 'ana' })), { depositedBy: 'cli/test' });
  const session = (i: number) => `session-${String(i).padStart(4, '0')}`;
  for (let i = 0; i <= MAX_PENDING_SESSIONS; i++) {
    const { appeared } = await store.agents.wait('ana', null, { timeoutMs: 0 }, session(i));
    assert.deepEqual(appeared.map((a) => a.id), [id], session(i));
  }
  await store.agents.seen('ana', 'signed', session(0));
  assert.deepEqual((await store.agents.undelivered('ana')).map((m) => m.id), [id], 'the forgotten session proved nothing');
  await store.agents.seen('ana', 'signed', 'someone-else');
  assert.deepEqual((await store.agents.undelivered('ana')).map((m) => m.id), [id], 'nor did a session that was given nothing');
  await store.agents.seen('ana', 'signed', session(1));
  assert.deepEqual(await store.agents.undelivered('ana'), [], 'a session still held proves what it was given');
});
