import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorCode, record, stdioClient, tempStore, textOf } from './helpers.js';

test('tools/list names the six tools, each with annotations', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay']);
  for (const tool of tools) {
    assert.ok(tool.annotations, `${tool.name} has annotations`);
    assert.equal(typeof tool.annotations.readOnlyHint, 'boolean');
    if (tool.name !== 'get_relay') assert.ok(tool.outputSchema, `${tool.name} has an output schema`);
  }
});

test('append_relay stores a record deposited by mcp and answers what it did', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'a' }) } });
  assert.equal(result.isError, undefined);
  const s = result.structuredContent as Record<string, string>;
  assert.equal(s.id, 'relay-0001');
  assert.equal(s.depositedBy, 'mcp');
  assert.equal(s.provenance, 'as-received');
  assert.match(s.digest!, /^sha256:[0-9a-f]{64}$/);
  assert.match(textOf(result), /relay-0001/);
});

test('a refusal is an isError result with a code, not a protocol error', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes: 'no first line' } });
  assert.equal(result.isError, true);
  assert.equal(errorCode(result), 'bad_record');
  assert.equal(result.structuredContent, undefined);
  assert.match(textOf(result), /@p-e\/x0/);
});
