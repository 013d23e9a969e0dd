/**
 * A named server's append_relay (lib/mcp/tools/append-relay.ts, named-key.ts):
 * a record sent twice without a key is stored once, since the model keeps no
 * key counter; and the answer's text is the id and what changes the next
 * step, the rest left to structuredContent. A real `serve --agent` over stdio.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { record, stdioClient, tempStore, textOf } from '../support/helpers.js';

test('a named question sent again without a key (a retry after a lost answer) replays the first record', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, ['--agent', 'ana']);
  const bytes = record({ kind: 'question', from: 'ana', to: 'bob' }, 'is relay-0001 right?');
  const first = await client.callTool({ name: 'append_relay', arguments: { bytes } });
  const again = await client.callTool({ name: 'append_relay', arguments: { bytes } });
  const [a, b] = [first.structuredContent, again.structuredContent] as { id: string; replayed?: true }[];
  assert.equal(b!.id, a!.id);
  assert.equal(b!.replayed, true);
  // A key of its own makes the same bytes a second record.
  const third = await client.callTool({ name: 'append_relay', arguments: { bytes, idempotency_key: 'ana/again' } });
  assert.notEqual((third.structuredContent as { id: string }).id, a!.id);
});

test('a named append answers the id in its text, and names the to: no agent has used', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, ['--agent', 'ana']);
  const stored = await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'ana', to: 'nobody-here' }, 'hello?') } });
  assert.equal(textOf(stored), 'stored relay-0001; unknownRecipients: nobody-here (no agent here has that name)');
  assert.match(String((stored.structuredContent as { digest: string }).digest), /^sha256:/);
});
