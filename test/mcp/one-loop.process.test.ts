/**
 * The one loop wait_for_relay's description gives (serve and collect answers
 * on one cursor, answer under "<you>/answer/<question id>"), run as written
 * by agents in their own serve processes on one corpus over real stdio (each
 * asks under append_relay's "<you>/q/<n>" key). The
 * text itself is held by test/mcp/tool-descriptions.process.test.ts; this is what it
 * promises: no deadlock when two agents ask each other, and a question
 * answered again after a restart stores nothing.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { errorCode, record, stdioClient, tempStore, textOf } from '../support/helpers.js';

interface Item {
  id: string;
  kind: string | null;
  from: string | null;
  parent: string | null;
  bytes?: string;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, { timeout: 60_000 })) as CallToolResult;
}

function answerBytes(me: string, question: Item): string {
  return record({ kind: 'answer', from: me, to: question.from ?? 'all', parent: question.id }, `${me} answers ${question.id}`);
}

/** Asks `peer` one question, then runs the loop until its answer came and every question seen was answered. */
async function agent(client: Client, me: string, peer: string): Promise<{ answer: Item; answered: string[] }> {
  const asked = await call(client, 'append_relay', { bytes: record({ kind: 'question', from: me, to: peer }, `${me} asks ${peer}`), idempotency_key: `${me}/q/1` });
  assert.notEqual(asked.isError, true, textOf(asked));
  const question = (asked.structuredContent as { id: string }).id;
  let answer: Item | undefined;
  const answered: string[] = [];
  let cursor = 'relay-0000';
  const deadline = Date.now() + 30_000;
  while (!answer || answered.length === 0) {
    assert.ok(Date.now() < deadline, `${me}: no deadlock, the loop ends`);
    const r = await call(client, 'wait_for_relay', { to: [me, 'all'], include_bytes: true, after: cursor, timeout_ms: 5000 });
    const { appeared, cursor: next } = r.structuredContent as { appeared: Item[]; cursor: string };
    for (const item of appeared) {
      if (item.from === me) continue;
      if (item.parent === question) answer = item;
      if (item.kind === 'question') {
        const sent = await call(client, 'append_relay', { bytes: answerBytes(me, item), idempotency_key: `${me}/answer/${item.id}` });
        assert.notEqual(sent.isError, true, textOf(sent));
        answered.push(item.id);
      }
    }
    cursor = next;
  }
  return { answer, answered };
}

async function twoAgents(t: TestContext) {
  const { corpus } = await tempStore(t);
  const [a, b] = await Promise.all([stdioClient(t, corpus), stdioClient(t, corpus)]);
  return { a: a.client, b: b.client };
}

test('two agents asking each other in the one loop each answer and each get their answer', async (t) => {
  const { a, b } = await twoAgents(t);
  const [alpha, beta] = await Promise.all([agent(a, 'alpha', 'beta'), agent(b, 'beta', 'alpha')]);
  assert.equal(alpha.answer.from, 'beta');
  assert.match(alpha.answer.bytes ?? '', /beta answers/);
  assert.equal(beta.answer.from, 'alpha');
  assert.deepEqual([alpha.answered.length, beta.answered.length], [1, 1]);
});

test('a question answered again from relay-0000 under "<you>/answer/<its id>" stores nothing: same bytes replay, other bytes conflict', async (t) => {
  const { a, b } = await twoAgents(t);
  const [, beta] = await Promise.all([agent(a, 'alpha', 'beta'), agent(b, 'beta', 'alpha')]);
  const [questionId] = beta.answered;
  const held = await call(b, 'wait_for_relay', { to: ['beta', 'all'], include_bytes: true, after: 'relay-0000', timeout_ms: 0 });
  const question = (held.structuredContent as { appeared: Item[] }).appeared.find((item) => item.id === questionId)!;
  const again = await call(b, 'append_relay', { bytes: answerBytes('beta', question), idempotency_key: `beta/answer/${question.id}` });
  assert.equal((again.structuredContent as { replayed?: boolean }).replayed, true, textOf(again));
  const redone = await call(b, 'append_relay', { bytes: answerBytes('beta', question) + ' (re-done)', idempotency_key: `beta/answer/${question.id}` });
  assert.equal(errorCode(redone), 'idempotency_conflict');
  const list = await call(b, 'list_relays', {});
  assert.equal((list.structuredContent as { present: string[] }).present.length, 4, 'two questions and two answers');
});

// Step 1 as written: a restart forgets which questions were its own; the catch-up's kind: question items tell it, and the loop from relay-0000 brings their answers.
test('a restarted asker recovers its own questions in the catch-up, and the loop from relay-0000 brings their answers', async (t) => {
  const { corpus } = await tempStore(t);
  const [a, b] = await Promise.all([stdioClient(t, corpus), stdioClient(t, corpus)]);
  await Promise.all([agent(a.client, 'alpha', 'beta'), agent(b.client, 'beta', 'alpha')]);
  const restarted = (await stdioClient(t, corpus)).client;
  const catchUp = await call(restarted, 'wait_for_relay', { from: 'alpha', after: 'relay-0000', timeout_ms: 0 });
  const mine = (catchUp.structuredContent as { appeared: Item[] }).appeared;
  const asked = mine.filter((item) => item.kind === 'question').map((item) => item.id);
  const answered = mine.filter((item) => item.kind === 'answer').map((item) => item.parent);
  assert.equal(asked.length, 1, 'its one question');
  assert.equal(answered.length, 1, 'the one question it answered');
  const loop = await call(restarted, 'wait_for_relay', { to: ['alpha', 'all'], include_bytes: true, after: 'relay-0000', timeout_ms: 0 });
  const items = (loop.structuredContent as { appeared: Item[] }).appeared.filter((item) => item.from !== 'alpha');
  const answers = items.filter((item) => item.kind === 'answer' && asked.includes(item.parent ?? ''));
  assert.deepEqual(answers.map((item) => item.from), ['beta'], 'the answer to its question, told by parent');
  const toAnswer = items.filter((item) => item.kind === 'question' && !answered.includes(item.id));
  assert.deepEqual(toAnswer, [], 'nothing to answer again');
});

// Over stdio every agent deposits as mcp, so keys share one scope: the conflict names the stored question's from:, which tells a collision from a retry.
test('a question key another agent already used is refused naming that agent in from:, and the asker\'s next "<you>/q/<n>" stores its question', async (t) => {
  const { a, b } = await twoAgents(t);
  const first = await call(a, 'append_relay', { bytes: record({ kind: 'question', from: 'alpha', to: 'all' }, 'alpha asks'), idempotency_key: 'q/1' });
  assert.notEqual(first.isError, true, textOf(first));
  const mine = record({ kind: 'question', from: 'beta', to: 'all' }, 'beta asks');
  const collided = await call(b, 'append_relay', { bytes: mine, idempotency_key: 'q/1' });
  assert.equal(errorCode(collided), 'idempotency_conflict');
  assert.match(textOf(collided), /A question from alpha already landed under this key as relay-0001: if that was you asking this same question, do not ask again/);
  const next = await call(b, 'append_relay', { bytes: mine, idempotency_key: 'beta/q/2' });
  assert.equal((next.structuredContent as { id: string }).id, 'relay-0002', textOf(next));
});

// idempotency_key's counter after a restart: 1 + every record the catch-up (from: <you>, every kind) returned. Notes and copies count on the
// same "<you>/q/<n>" as questions, so a count of questions alone would hand out an n already held.
test('a restarted agent\'s next "<you>/q/<n>", 1 + every record its catch-up returned, is free after questions, notes and answers', async (t) => {
  const { corpus } = await tempStore(t);
  const before = (await stdioClient(t, corpus)).client;
  const sends: [string, string][] = [
    [record({ kind: 'question', from: 'alpha', to: 'all' }, 'alpha asks'), 'alpha/q/1'],
    [record({ kind: 'note', from: 'alpha', to: 'all' }, 'alpha notes'), 'alpha/q/2'],
    [record({ kind: 'answer', from: 'alpha', to: 'beta', parent: 'relay-0009' }, 'alpha answers'), 'alpha/answer/relay-0009'],
    [record({ kind: 'note', from: 'alpha', to: 'all' }, 'alpha notes again'), 'alpha/q/3'],
  ];
  for (const [bytes, key] of sends) assert.notEqual((await call(before, 'append_relay', { bytes, idempotency_key: key })).isError, true);
  const restarted = (await stdioClient(t, corpus)).client;
  const catchUp = await call(restarted, 'wait_for_relay', { from: 'alpha', after: 'relay-0000', timeout_ms: 0 });
  const n = 1 + (catchUp.structuredContent as { appeared: Item[] }).appeared.length;
  const next = await call(restarted, 'append_relay', { bytes: record({ kind: 'question', from: 'alpha', to: 'all' }, 'alpha asks anew'), idempotency_key: `alpha/q/${n}` });
  assert.notEqual(next.isError, true, textOf(next));
  assert.equal((next.structuredContent as { replayed?: boolean }).replayed, undefined, 'a new record, not an earlier one');
});
