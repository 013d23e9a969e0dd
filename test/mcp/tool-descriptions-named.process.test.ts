/**
 * What a named agent's model reads (`serve --agent NAME`): half the listing,
 * because the relay keeps its place, keys what it sends and checks its
 * from:, so the loop is said once, in the server's instructions, naming the
 * agent, and each tool says only what it does. Measured as the unnamed one
 * is (test/mcp/tool-descriptions.process.test.ts): a real stdio server's tools/list.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NAMED_INSTRUCTIONS_BUDGET_BYTES } from '../../lib/mcp/instructions.js';
import { listTools, NAMED_DESCRIPTION_BUDGET_BYTES, NAMED_LISTING_BUDGET_BYTES } from '../../scripts/tools-list.js';

const named = listTools({ agent: 'scout-7' });
const unnamed = listTools();

test(`a named server's compact tools/list fits in ${NAMED_LISTING_BUDGET_BYTES} bytes, its six descriptions in ${NAMED_DESCRIPTION_BUDGET_BYTES}, its instructions in ${NAMED_INSTRUCTIONS_BUDGET_BYTES}`, async () => {
  const { tools, instructions } = await named;
  assert.equal(tools.length, 6);
  const listing = Buffer.byteLength(JSON.stringify(tools));
  const descriptions = tools.reduce((sum, tool) => sum + Buffer.byteLength(tool.description ?? ''), 0);
  assert.ok(listing <= NAMED_LISTING_BUDGET_BYTES, `tools/list ${listing} bytes`);
  assert.ok(descriptions <= NAMED_DESCRIPTION_BUDGET_BYTES, `descriptions ${descriptions} bytes`);
  assert.ok(Buffer.byteLength(instructions) <= NAMED_INSTRUCTIONS_BUDGET_BYTES, `instructions ${Buffer.byteLength(instructions)} bytes`);
  // Listing and instructions together, the whole of what a named agent reads once, stay under what an unnamed one reads in the listing alone.
  assert.ok(listing + Buffer.byteLength(instructions) < Buffer.byteLength(JSON.stringify((await unnamed).tools)), `${listing} bytes named`);
});

test('the same six tools, with the same parameters, each described', async () => {
  const [a, b] = [await named, await unnamed];
  assert.deepEqual(a.tools.map((tool) => tool.name), b.tools.map((tool) => tool.name));
  for (const tool of a.tools) {
    const twin = b.tools.find((other) => other.name === tool.name)!;
    assert.deepEqual(Object.keys(tool.inputSchema.properties ?? {}), Object.keys(twin.inputSchema.properties ?? {}), tool.name);
    for (const [param, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
      assert.ok(((schema as { description?: string }).description ?? '').length > 10, `${tool.name}.${param}`);
    }
  }
});

test('the instructions name the agent and carry the loop: no cursor, no key counter, the agent\'s own from: in the recipes', async () => {
  const { instructions, tools } = await named;
  assert.match(instructions, /^You are scout-7 on p-e-relay/);
  assert.match(instructions, /1\. Call wait_for_relay with no arguments/);
  assert.match(instructions, /kind: answer\\nfrom: scout-7\\nto: <its from, else all>\\nparent: <its id>/);
  assert.match(instructions, /kind: question\\nfrom: scout-7\\nto: <a name, or all>/);
  // The bookkeeping the relay now keeps is named nowhere the model reads.
  const all = instructions + JSON.stringify(tools);
  assert.doesNotMatch(all, /<you>|\/q\/<n>|your saved cursor|catch-up/);
});

test('the loop is told what to trust: from: verified by signature over HTTP, only a guard over stdio', async () => {
  const { instructions } = await named;
  assert.match(instructions, /Over HTTP \(depositedBy http\/<name>\) that name was verified by signature; over stdio \(depositedBy mcp\) it only guards against mistakes/);
});

test('append_relay names the refusals that change the next step; the rest say what to do in their own sentence', async () => {
  const { tools } = await named;
  const text = tools.find((tool) => tool.name === 'append_relay')!.description!;
  assert.match(text, /Its from: is scout-7 or absent \(another name: from_mismatch\)/);
  for (const code of ['bad_record', 'too_large', 'from_mismatch', 'rate_limited', 'disk_full', 'store_unavailable', 'read_only']) assert.match(text, new RegExp(`\\b${code}\\b`), code);
});

test('wait_for_relay\'s hints are true to a named wait, which moves the agent\'s mark: not read-only, not idempotent, not destructive; unnamed it stays read-only', async () => {
  const hintsOf = async (listing: typeof named) => (await listing).tools.find((tool) => tool.name === 'wait_for_relay')!.annotations;
  assert.deepEqual(await hintsOf(named), { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false });
  assert.deepEqual(await hintsOf(unnamed), { readOnlyHint: true, idempotentHint: true, openWorldHint: false });
});
