/**
 * wait_for_relay past its cap (WAIT_MAX_ITEMS): a catch-up from the start of
 * a big store answers the lowest ids and a cursor from which the next call
 * goes on, instead of one message too long for the client's stdio transport.
 * Records are written straight to disk (10,050 in well under a second), read by
 * a real server, asked over stdio by the SDK's client.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { WAIT_MAX_ITEMS } from '../../lib/store/follow/waiters.js';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { stdioClient, tempStore, textOf } from '../support/helpers.js';

const RECORDS = WAIT_MAX_ITEMS + 50;
const id = (n: number) => `relay-${String(n).padStart(5, '0')}`;

test('wait_for_relay past its cap answers the lowest ids, and its cursor leads the next call to every other record once', async (t) => {
  const { corpus } = await tempStore(t, { idWidth: 5 });
  for (let i = 1; i <= RECORDS; i++) {
    const bytes = Buffer.from(`@p-e/x0\nkind: note\nfrom: agent-${i % 3}\n\nrecord ${i}\n`);
    const deposit = { provenance: 'as-received' as const, depositedBy: 'test', depositedAt: new Date(0).toISOString(), digest: digestOf(bytes) };
    writeFileSync(path.join(corpus, id(i)), buildRecordFile(deposit, bytes)); // synchronously: 10,050 thread-pool round trips saved
  }
  const { client } = await stdioClient(t, corpus);
  const wait = async (after: string) => (await client.callTool({ name: 'wait_for_relay', arguments: { after, timeout_ms: 0 } }, { timeout: 60_000 })) as CallToolResult;

  const first = await wait(id(0));
  assert.equal(first.isError, undefined, textOf(first));
  const one = first.structuredContent as { appeared: { id: string }[]; cursor: string };
  assert.equal(one.appeared.length, WAIT_MAX_ITEMS);
  assert.deepEqual(one.appeared.map((x) => x.id), Array.from({ length: WAIT_MAX_ITEMS }, (_, k) => id(k + 1)));
  assert.equal(one.cursor, id(WAIT_MAX_ITEMS));

  const second = await wait(one.cursor);
  const two = second.structuredContent as { appeared: { id: string }[]; cursor: string };
  assert.deepEqual(two.appeared.map((x) => x.id), Array.from({ length: RECORDS - WAIT_MAX_ITEMS }, (_, k) => id(WAIT_MAX_ITEMS + k + 1)));
  assert.equal(two.cursor, id(RECORDS));
});
