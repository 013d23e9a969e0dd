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
