/**
 * What the tool listing promises about answers, checked against a real
 * server over stdio: list_replies' items carry the fields a wait item always
 * has (its text says "fields as in wait_for_relay's items"); an item whose
 * bytes were omitted says its size; a damaged record is never returned by a
 * wait; and of two appends racing under one idempotency key, the one that
 * stored has no `replayed` (the listing says "another call", not "an
 * earlier call").
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { record, stdioClient, tempStore, textOf } from '../support/helpers.js';

interface Item {
  id: string;
  depositedBy?: string;
  provenance?: string;
  depositedAt?: string;
  bytes?: string;
  bytesOmitted?: true;
  size?: number;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(result.isError, true, textOf(result));
  return result;
}

const itemsOf = (result: CallToolResult) => (result.structuredContent as { appeared: Item[] }).appeared;

test("list_replies' items carry depositedBy, provenance and depositedAt, as the wait's items for the same records do", async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  await call(client, 'append_relay', { bytes: record({ kind: 'question', from: 'a', to: 'b' }, 'q') });
  await call(client, 'append_relay', { bytes: record({ kind: 'answer', from: 'b', to: 'a', parent: 'relay-0001' }, 'a') });
  const replies = (await call(client, 'list_replies', { id: 'relay-0001' })).structuredContent as { replies: Item[] };
  const waited = itemsOf(await call(client, 'wait_for_relay', { replies_to: 'relay-0001', after: 'relay-0000', timeout_ms: 0 }));
  assert.equal(replies.replies.length, 1);
  const pick = ({ id, depositedBy, provenance, depositedAt }: Item) => ({ id, depositedBy, provenance, depositedAt });
  assert.deepEqual(replies.replies.map(pick), waited.map(pick));
  assert.match(replies.replies[0]!.depositedAt!, /^\d{4}-\d\d-\d\dT/);
});

test('an item whose bytes were omitted says the size of its bytes, in the structure and the text', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const small = record({ to: 'me' }, 'small');
  const big = record({ to: 'me' }, 'x'.repeat(40 * 1024));
  for (const bytes of [small, big, big, small]) await call(client, 'append_relay', { bytes });
  const answer = await call(client, 'wait_for_relay', { to: 'me', after: 'relay-0000', include_bytes: true, timeout_ms: 0 });
  const items = itemsOf(answer);
  assert.deepEqual(items.map((i) => [i.bytesOmitted ?? false, i.size ?? null]), [[false, null], [false, null], [true, Buffer.byteLength(big)], [true, Buffer.byteLength(small)]]);
  assert.match(textOf(answer), new RegExp(`relay-0003 .*\\n  \\(bytes omitted: ${Buffer.byteLength(big)} bytes, past this answer's 64 KiB; fetch with get_relay\\)`));
});

test('a damaged record is never returned by a wait, filtered or not; an unfiltered list_relays names it', async (t) => {
  const { corpus } = await tempStore(t);
  {
    const { client } = await stdioClient(null, corpus);
    for (let i = 0; i < 3; i++) await call(client, 'append_relay', { bytes: record({ to: 'me' }, `record ${i}`) });
    await client.close();
  }
  // Its bytes no longer match their digest.
  await writeFile(path.join(corpus, 'relay-0002'), 'provenance: as-received\ndeposited-by: mcp\ndeposited-at: 2026-01-01T00:00:00.000Z\ndigest: sha256:00\n---\n@p-e/x0\nto: me\n\nedited\n');
  const { client } = await stdioClient(t, corpus);
  for (const filter of [{}, { to: 'me' }]) {
    const items = itemsOf(await call(client, 'wait_for_relay', { ...filter, after: 'relay-0000', timeout_ms: 0 }));
    assert.deepEqual(items.map((i) => i.id), ['relay-0001', 'relay-0003'], JSON.stringify(filter));
  }
  assert.deepEqual(((await call(client, 'list_relays', {})).structuredContent as { present: string[] }).present, ['relay-0001', 'relay-0002', 'relay-0003'], 'an unfiltered list names it');
});

test('of appends racing under one idempotency key, exactly one stored (no replayed), and the listing says replayed means another call stored it', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const { client: other } = await stdioClient(t, corpus);
  const bytes = record({ kind: 'note', from: 'a' }, 'once');
  const answers = await Promise.all([client, other, client, other].map((c) => call(c, 'append_relay', { bytes, idempotency_key: 'a/q/1' })));
  const facts = answers.map((a) => a.structuredContent as { id: string; replayed?: true });
  assert.deepEqual(new Set(facts.map((f) => f.id)), new Set(['relay-0001']));
  assert.equal(facts.filter((f) => f.replayed !== true).length, 1, 'one call stored the record; every other says replayed');
  const { tools } = await client.listTools();
  const replayed = (tools.find((tool) => tool.name === 'append_relay')!.outputSchema!.properties as Record<string, { description: string }>).replayed!;
  assert.equal(replayed.description, 'another call with this key stored it');
});
