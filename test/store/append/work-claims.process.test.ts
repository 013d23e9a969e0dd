/**
 * Work claims across processes (spec §8e): eight named stdio servers on
 * one corpus racing for the same task, round after round, store exactly
 * one claim each round; the rest are refused claimed naming the winner.
 * Real SDK clients over real stdio pipes to the bundle.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { errorCode, record, stdioClient, tempStore, textOf } from '../../support/helpers.js';

const SERVERS = 8;
const ROUNDS = 10;

test(`${SERVERS} stdio servers racing for one task, ${ROUNDS} rounds: exactly one claim stored each round`, async (t) => {
  const { corpus } = await tempStore(t);
  const agents = await Promise.all(Array.from({ length: SERVERS }, (_, i) => stdioClient(t, corpus, ['--agent', `racer-${i}`])));
  for (let round = 0; round < ROUNDS; round++) {
    const calls = agents.map(({ client }) => client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'claim', claim: `task:job-${round}` }, '') } }));
    const results = (await Promise.all(calls)) as CallToolResult[];
    const won = results.filter((r) => !r.isError);
    assert.equal(won.length, 1, `round ${round}: ${results.map(textOf).join(' | ')}`);
    const winner = (won[0]!.structuredContent as { id: string }).id;
    for (const r of results.filter((x) => x.isError)) {
      assert.equal(errorCode(r), 'claimed', textOf(r));
      assert.match(textOf(r), new RegExp(winner));
    }
  }
  const files = (await readdir(corpus)).filter((n) => n.startsWith('relay-'));
  assert.equal(files.length, ROUNDS);
  for (const f of files) assert.match(await readFile(path.join(corpus, f), 'utf8'), /^agent: racer-\d$/m);
});

test('two hosts (P_E_RELAY_HOST) × 2 stdio servers claiming the same 100 tasks at once: none granted twice, none lost', async (t) => {
  const { corpus } = await tempStore(t);
  const servers = await Promise.all(
    ['host-a', 'host-b'].flatMap((host) => [0, 1].map((i) => stdioClient(t, corpus, ['--agent', `${host}-${i}`], { P_E_RELAY_HOST: host }))),
  );
  const granted = new Map<number, string[]>();
  await Promise.all(servers.map(async ({ client }, s) => {
    for (let task = 0; task < 100; task++) {
      const r = (await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'claim', claim: `task:shared-${task}` }, '') } })) as CallToolResult;
      if (r.isError) assert.equal(errorCode(r), 'claimed', textOf(r));
      else granted.set(task, [...(granted.get(task) ?? []), `server ${s}`]);
    }
  }));
  assert.equal(granted.size, 100, 'every task granted');
  assert.deepEqual([...granted].filter(([, who]) => who.length > 1), [], 'no task granted twice');
});
