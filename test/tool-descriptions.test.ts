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

const descriptionOf = async (name: string) => (await listing).tools.find((tool) => tool.name === name)!.description ?? '';

// Followed literally, a recipe must neither miss a message nor store or answer one twice.
test('the ask recipe: headers in bytes, a fresh key, and a wait from the question\'s own id that repeats from its cursor until the answer comes', async () => {
  const text = await descriptionOf('append_relay');
  assert.match(text, /headers inside bytes/);
  assert.match(text, /"@p-e\/x0\nkind: question\nfrom: <you>\nto: <peer>\n\n<question>" .*, with a fresh idempotency_key\./);
  // after: <id>, or a fast reply is missed; include_bytes, or each answer costs a get_relay.
  assert.match(text, /wait_for_relay with replies_to: <id>, after: <id>, kind: "answer", include_bytes: true \(<id>: the returned id\)/);
  assert.match(text, /until one comes \(on timedOut too\), call again with after: its cursor/);
  // The key belongs to the record, not the try: an earlier try whose answer was lost may have landed.
  assert.match(text, /rate_limited; retry after its retryAfterS with the same idempotency_key/);
});

test('the serve recipe: questions only, from relay-0000, bytes inline, skipping your own, each answer with a fresh key', async () => {
  const text = await descriptionOf('wait_for_relay');
  assert.match(text, /first call to: \["<you>", "all"\], kind: "question", include_bytes: true, after: relay-0000/);
  assert.match(text, /skip items from: <you>/);
  assert.match(text, /"@p-e\/x0\nkind: answer\nfrom: <you>\nto: <its from>\nparent: <its id>\n\n<answer>" and a fresh idempotency_key/);
});

test('the cursor rule comes before the recipes: one cursor per filter set, never another set\'s', async () => {
  const text = await descriptionOf('wait_for_relay');
  const rule = text.indexOf('Keep one cursor per filter set');
  assert.ok(rule > 0 && rule < text.indexOf('Serve'), text);
  assert.match(text, /never another set's cursor/);
});

test('each name filter names its own refusal, bad_filter, so the descriptions need not list it', async () => {
  const { tools } = await listing;
  for (const name of ['wait_for_relay', 'list_relays']) {
    const props = tools.find((tool) => tool.name === name)!.inputSchema.properties as Record<string, { description?: string }>;
    for (const key of ['to', 'from', 'kind']) assert.match(props[key]!.description ?? '', /refused bad_filter/, `${name}.${key}`);
  }
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
