/**
 * What a model reads on every call: the tools/list answer of a real stdio
 * server. The six descriptions share one byte budget (parameter details
 * live in the parameter descriptions), and no parameter is left unexplained.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DESCRIPTION_BUDGET_BYTES, listTools } from '../scripts/tools-list.js';

const listing = listTools();

test(`the six tool descriptions together fit in ${DESCRIPTION_BUDGET_BYTES} bytes`, async () => {
  const { tools } = await listing;
  assert.equal(tools.length, 6);
  const sizes = Object.fromEntries(tools.map((tool) => [tool.name, Buffer.byteLength(tool.description ?? '')]));
  const total = Object.values(sizes).reduce((a, b) => a + b, 0);
  assert.ok(total <= DESCRIPTION_BUDGET_BYTES, `${total} bytes: ${JSON.stringify(sizes)}`);
});

test('every input parameter of every tool has a description', async () => {
  const { tools } = await listing;
  for (const tool of tools) {
    for (const [name, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
      assert.ok(typeof (schema as { description?: string }).description === 'string' && (schema as { description: string }).description.length > 10, `${tool.name}.${name}`);
    }
  }
});

test('the recipes pass after wherever a reply or the backlog could land before the wait starts', async () => {
  const { tools } = await listing;
  const description = (name: string) => tools.find((tool) => tool.name === name)!.description ?? '';
  // Asking: wait on the question's own id as the mark, or a fast reply is missed.
  assert.match(description('append_relay'), /wait_for_relay with replies_to and after both set to the returned id/);
  // Serving an inbox: the first call starts from relay-0000, or the backlog is missed.
  assert.match(description('wait_for_relay'), /first call to: \["<you>", "all"\], after: relay-0000/);
});

test('timeout_ms states no maximum in its schema: values above the cap are capped, not refused (SPEC §8)', async () => {
  const { tools } = await listing;
  const wait = tools.find((tool) => tool.name === 'wait_for_relay')!;
  const timeout = (wait.inputSchema.properties as Record<string, { maximum?: number; minimum?: number }>).timeout_ms!;
  assert.equal(timeout.maximum, undefined);
  assert.equal(timeout.minimum, 0);
});
