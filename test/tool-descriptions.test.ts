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
  // Asking: the headers go in bytes, and the wait takes the question's own id as the mark, or a fast reply is missed.
  assert.match(description('append_relay'), /headers inside bytes/);
  assert.match(description('append_relay'), /"@p-e\/x0\nkind: question\nfrom: <you>\nto: <peer>\n\n/);
  assert.match(description('append_relay'), /wait_for_relay with replies_to: <id>, after: <id>, kind: "answer" \(<id>: the returned id\)/);
  // Serving an inbox: the first call starts from relay-0000, or the backlog is missed.
  assert.match(description('wait_for_relay'), /first call to: \["<you>", "all"\], after: relay-0000/);
  assert.match(description('wait_for_relay'), /"@p-e\/x0\nkind: answer\nfrom: <you>\nto: <its from>\nparent: <its id>\n\n/);
});

test('every tool says how it refuses: the four that can, the form and their codes; the two that cannot, that they never refuse', async () => {
  const { tools } = await listing;
  for (const tool of tools) {
    const text = tool.description ?? '';
    if (tool.name === 'exists' || tool.name === 'list_replies') assert.match(text, /Never refuses/, tool.name);
    else assert.match(text, /Refusals are isError text saying what to do, code in _meta\["p-e-relay\/error"\]\.code/, tool.name);
  }
});

test('the filters are described alike on wait_for_relay and list_relays: neither schema points at the other', async () => {
  const { tools } = await listing;
  const filters = (name: string) => {
    const props = tools.find((tool) => tool.name === name)!.inputSchema.properties as Record<string, { description?: string }>;
    return ['to', 'from', 'kind', 'replies_to'].map((key) => props[key]!.description);
  };
  assert.deepEqual(filters('list_relays'), filters('wait_for_relay'));
  for (const text of filters('wait_for_relay')) assert.doesNotMatch(text ?? '', /wait_for_relay|list_relays/);
});

test('timeout_ms states no maximum in its schema: values above the cap are capped, not refused (SPEC §8)', async () => {
  const { tools } = await listing;
  const wait = tools.find((tool) => tool.name === 'wait_for_relay')!;
  const timeout = (wait.inputSchema.properties as Record<string, { maximum?: number; minimum?: number }>).timeout_ms!;
  assert.equal(timeout.maximum, undefined);
  assert.equal(timeout.minimum, 0);
});
