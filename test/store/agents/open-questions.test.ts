/**
 * Open questions (lib/store/agents/open-questions.ts): which records stay in
 * an agent's view as unanswered questions to it, and for how long.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { OPEN_FOR_MS, OPEN_SHOWN, type RelayStore } from '../../../lib/store/store.js';
import { openTempStore, record } from '../../support/helpers.js';

async function ask(store: RelayStore, headers: Record<string, string>, by = 'mcp/carol'): Promise<string> {
  return (await store.append(Buffer.from(record(headers, 'which port?')), { depositedBy: by })).id;
}

async function storeWith(t: TestContext) {
  const store = await openTempStore(t);
  return { store, open: (agent: string, given: string[] = [], now?: number) => store.questions.open(agent, store.head, given, now) };
}

test('a question to the agent by name is open; one to all, one of another kind, and the agent\'s own are not', async (t) => {
  const { store, open } = await storeWith(t);
  const q = await ask(store, { kind: 'Question', to: 'bob, ana' });
  await ask(store, { kind: 'question', to: 'all' });
  await ask(store, { kind: 'note', to: 'ana' });
  await ask(store, { kind: 'question', to: 'carol' }, 'mcp/ana');
  assert.deepEqual(open('ana'), [q]);
});

test('the question the answer carries in full is not listed again', async (t) => {
  const { store, open } = await storeWith(t);
  const q = await ask(store, { kind: 'question', to: 'ana' });
  assert.deepEqual(open('ana', [q]), []);
  assert.deepEqual(open('ana'), [q]);
});

test('the agent\'s own answer closes it; another agent\'s, or its own reply of another kind, does not', async (t) => {
  const { store, open } = await storeWith(t);
  const q = await ask(store, { kind: 'question', to: 'ana bob' });
  await ask(store, { kind: 'answer', to: 'carol', parent: q }, 'mcp/bob');
  await ask(store, { kind: 'note', to: 'carol', parent: q }, 'mcp/ana');
  assert.deepEqual(open('ana'), [q]);
  await ask(store, { kind: 'answer', to: 'carol', parent: q }, 'mcp/ana');
  assert.deepEqual(open('ana'), []);
  assert.deepEqual(open('ana'), [], 'closed for good');
});

test(`a question lapses ${OPEN_FOR_MS / 3_600_000} h after it landed, answered or not`, async (t) => {
  const { store, open } = await storeWith(t);
  const q = await ask(store, { kind: 'question', to: 'ana' });
  assert.deepEqual(open('ana', [], Date.now() + OPEN_FOR_MS - 60_000), [q]);
  assert.deepEqual(open('ana', [], Date.now() + OPEN_FOR_MS + 60_000), []);
});

test(`at most ${OPEN_SHOWN} ids, oldest first`, async (t) => {
  const { store, open } = await storeWith(t);
  const ids: string[] = [];
  for (let i = 0; i < OPEN_SHOWN + 3; i++) ids.push(await ask(store, { kind: 'question', to: 'ana' }));
  assert.deepEqual(open('ana'), ids.slice(0, OPEN_SHOWN));
});

test('an answer goes to the asker its channel names, else its from:, else all; an asker gone changes nothing', async (t) => {
  const { store } = await storeWith(t);
  assert.equal(store.questions.askerOf(await ask(store, { kind: 'question', to: 'ana' })), 'carol');
  assert.equal(store.questions.askerOf(await ask(store, { kind: 'question', from: 'dave', to: 'ana' }, 'cli/op')), 'dave');
  assert.equal(store.questions.askerOf(await ask(store, { kind: 'question', to: 'ana' }, 'cli/op')), 'all');
  assert.equal(store.questions.askerOf('relay-0999'), 'all');
});
