/**
 * Addressed delivery under many processes: a cursor loop that must see
 * every matching record exactly once while four other serve processes
 * append, and a 20-agent swarm (one serve process per agent, real stdio
 * pipes, one corpus) that asks and answers through filtered waits only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { agentName, runSwarm } from '../../bench/lib/swarm.js';
import { record, stdioClient, tempStore, textOf } from '../support/helpers.js';

test('a cursor loop sees every record addressed to it exactly once while four processes append', async (t) => {
  const { corpus } = await tempStore(t);
  const [reader, ...writers] = await Promise.all([0, 1, 2, 3, 4].map(() => stdioClient(t, corpus).then((c) => c.client)));
  assert.ok(reader);
  const expected = new Set<string>();
  let writing = true;
  const write = Promise.all(
    writers.map(async (client, p) => {
      for (let i = 0; i < 40; i++) {
        const to = i % 3 === 0 ? 'me' : i % 3 === 1 ? `other-${p}, me-too` : `x me`;
        const result = (await client.callTool({ name: 'append_relay', arguments: { bytes: record({ from: `w${p}`, to }, `${p}/${i}`) } })) as CallToolResult;
        assert.notEqual(result.isError, true, textOf(result));
        if (to !== `other-${p}, me-too`) expected.add((result.structuredContent as { id: string }).id);
      }
    }),
  ).finally(() => (writing = false));

  const seen: string[] = [];
  let cursor = 'relay-0000';
  const deadline = Date.now() + 60_000;
  // Keep reading until the writers are done and a wait from the last cursor finds nothing more.
  for (;;) {
    assert.ok(Date.now() < deadline, `the loop saw ${seen.length} of ${expected.size} in time`);
    const done = !writing;
    const result = (await reader.callTool({ name: 'wait_for_relay', arguments: { to: 'me', after: cursor, timeout_ms: done ? 1000 : 300 } })) as CallToolResult;
    const answer = result.structuredContent as { appeared: { id: string; to: string }[]; cursor: string; timedOut: boolean };
    for (const item of answer.appeared) {
      assert.ok(item.to.split(/[\s,]+/).includes('me'), `${item.id} (to: ${item.to}) is not addressed to me`);
      seen.push(item.id);
    }
    assert.ok(answer.cursor >= cursor, 'the cursor never moves back');
    cursor = answer.cursor;
    if (done && answer.timedOut && seen.length >= expected.size) break;
  }
  await write;
  assert.equal(new Set(seen).size, seen.length, 'no record was seen twice');
  assert.deepEqual([...seen].sort(), [...expected].sort(), 'every record addressed to me was seen');
});

test('a swarm of 20 agents, each in its own serve process, asks and answers through filtered waits only', async (t) => {
  const { corpus } = await tempStore(t);
  const clients = await Promise.all(Array.from({ length: 20 }, () => stdioClient(t, corpus).then((c) => c.client)));
  const agents = clients.map((client) => ({
    call: (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, { timeout: 120_000 }) as Promise<CallToolResult>,
  }));
  const report = await runSwarm(agents, { questionsEach: 3, mode: 'addressed', deadlineMs: 120_000, now: () => Date.now() });
  assert.equal(report.asked, 60);
  assert.equal(report.answered, 60, 'every question was answered');
  assert.deepEqual(report.leaks, [], 'no wait answer carried a record its filter should have kept out');
  assert.deepEqual(report.duplicates, [], 'no agent got a record twice');
  // Every record is a question or its answer, addressed to one agent.
  const listed = (await clients[0]!.callTool({ name: 'list_relays', arguments: { to: agentName(0) } })).structuredContent as { present: string[] };
  assert.equal(listed.present.length, 3 + 3, `${agentName(0)} was asked 3 questions and got 3 answers`);
});
