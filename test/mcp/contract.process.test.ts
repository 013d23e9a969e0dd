/**
 * One agent contract on every door. The golden files in test/mcp/golden/
 * hold the whole tools/list answer per era and the instructions per door,
 * so a reviewer sees every changed word in a diff; each door's listing is
 * asserted equal to the shared one (only the instructions name the agent).
 *
 *   UPDATE_GOLDEN=1 node --import tsx --test test/mcp/contract.process.test.ts   rewrites them
 *
 * Run `npm run build` first: the doors are real processes of bin/p-e-relay.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { INSTRUCTIONS_BUDGET_BYTES } from '../../lib/mcp/instructions.js';
import { clampWait, DEFAULT_WAIT_MS } from '../../lib/store/follow/waiters.js';
import { AGENT, DESCRIPTION_BUDGET_BYTES, DOORS, ERAS, LISTING_BUDGET_BYTES, listingBytes, listTools, type Door, type Era, type Listing } from '../../scripts/tools-list.js';
import { ROOT } from '../support/helpers.js';

const GOLDEN = path.join(ROOT, 'test', 'mcp', 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

/** Each door and era listed once (a door's listing is a process or two: shared by the tests below). */
const listings = new Map<string, Promise<Listing>>();
const listing = (door: Door, era: Era) => {
  const key = `${door} ${era}`;
  if (!listings.has(key)) listings.set(key, listTools({ door, era }));
  return listings.get(key)!;
};

async function golden(file: string, actual: string): Promise<void> {
  const at = path.join(GOLDEN, file);
  if (UPDATE) {
    await mkdir(GOLDEN, { recursive: true });
    await writeFile(at, actual);
    return;
  }
  assert.equal(actual, await readFile(at, 'utf8'), `${file} differs: read the diff, and if it is meant, run with UPDATE_GOLDEN=1`);
}

/** The answer as a golden holds it: the tools, and the era's cache hint (none in 2025). */
const toolsFile = (l: Listing) => JSON.stringify({ tools: l.tools, ttlMs: l.ttlMs, cacheScope: l.cacheScope }, null, 2) + '\n';

for (const era of ERAS) {
  test(`${era}: every door lists the same tools, word for word as test/mcp/golden/tools-list.${era}.json`, async () => {
    await golden(`tools-list.${era}.json`, toolsFile(await listing('stdio', era)));
    for (const door of DOORS) assert.equal(toolsFile(await listing(door, era)), toolsFile(await listing('stdio', era)), `${door} lists other tools than stdio serve --agent`);
  });

  test(`${era}: every door's tools/list is at most ${LISTING_BUDGET_BYTES} bytes, the six descriptions at most ${DESCRIPTION_BUDGET_BYTES}`, async () => {
    for (const door of DOORS) {
      const l = await listing(door, era);
      assert.ok(listingBytes(l) <= LISTING_BUDGET_BYTES, `${door}: tools/list ${listingBytes(l)} bytes`);
      const descriptions = l.tools.reduce((sum, tool) => sum + Buffer.byteLength(tool.description ?? ''), 0);
      assert.ok(descriptions <= DESCRIPTION_BUDGET_BYTES, `${door}: descriptions ${descriptions} bytes`);
    }
  });
}

test('2026-07-28: every door, the bridge too, lets a client keep tools/list a minute, for anyone (ttlMs, cacheScope public)', async () => {
  for (const door of DOORS) {
    const l = await listing(door, '2026-07-28');
    assert.ok((l.ttlMs ?? 0) >= 60_000, `${door}: ttlMs ${l.ttlMs}`);
    assert.equal(l.cacheScope, 'public', door);
  }
});

test('the instructions are each door\'s golden file; the bridge\'s are a named stdio server\'s, word for word', async () => {
  for (const era of ERAS) {
    for (const door of DOORS) {
      const { instructions } = await listing(door, era);
      assert.ok(Buffer.byteLength(instructions) <= INSTRUCTIONS_BUDGET_BYTES, `${door}: instructions ${Buffer.byteLength(instructions)} bytes`);
      // The bridge's golden is the named stdio server's: the one contract, naming the agent.
      await golden(`instructions.${door === 'bridge' ? 'stdio' : door}.txt`, instructions.replaceAll(AGENT, 'NAME') + '\n');
    }
  }
});

test('the named doors\' instructions differ only in the name they carry', async () => {
  const { instructions } = await listing('stdio', '2026-07-28');
  assert.ok(instructions.includes(`You are ${AGENT} on p-e-relay`));
  assert.ok(instructions.includes(`from: ${AGENT}\\n`), 'the recipes carry the agent\'s own from:');
});

test('the listing repeats no $schema and no annotations.title, and every input parameter has a description', async () => {
  const { tools } = await listing('stdio', '2026-07-28');
  for (const tool of tools) {
    assert.doesNotMatch(JSON.stringify(tool), /\$schema/, tool.name);
    assert.equal((tool.annotations as { title?: string } | undefined)?.title, undefined, tool.name);
    for (const [name, schema] of Object.entries((tool.inputSchema.properties ?? {}) as Record<string, { description?: string }>)) {
      assert.ok(schema.description, `${tool.name}.${name} has no description`);
    }
  }
});

test('wait_for_relay\'s hints are true to the wait every door runs: it moves the caller\'s place, so it is neither read-only nor idempotent', async () => {
  for (const door of DOORS) {
    const wait = (await listing(door, '2026-07-28')).tools.find((tool) => tool.name === 'wait_for_relay')!;
    // A hint left out reads as MCP's default (readOnlyHint and idempotentHint false), so the listing says only the other two.
    assert.deepEqual(wait.annotations, { destructiveHint: false, openWorldHint: false }, door);
  }
});

test('timeout_ms states no maximum in its schema: a larger value is capped, not refused (spec §8)', async () => {
  const { tools } = await listing('stdio', '2026-07-28');
  const timeout = (tools.find((tool) => tool.name === 'wait_for_relay')!.inputSchema.properties as Record<string, Record<string, unknown>>).timeout_ms!;
  assert.equal(timeout.maximum, undefined);
});

test('a 6-digit store\'s tools show its width by example and name both caps', async () => {
  const { tools } = await listTools({ idWidth: 6 });
  const of = (name: string) => JSON.stringify(tools.find((tool) => tool.name === name));
  assert.match(of('exists'), /e\.g\. relay-000033/);
  assert.match(of('list_relays'), /200,000 ids/);
  assert.match(of('wait_for_relay'), /at most 10,000/);
});

test('the default wait is what the words say, and ends before the 60 s many clients give a call without progress', async () => {
  assert.equal(clampWait(undefined), DEFAULT_WAIT_MS);
  assert.ok(DEFAULT_WAIT_MS < 60_000);
  const { tools, instructions } = await listing('stdio', '2026-07-28');
  assert.ok(tools.find((tool) => tool.name === 'wait_for_relay')!.description!.includes(`default ${DEFAULT_WAIT_MS / 1000} s`));
  assert.ok(instructions.includes(`about ${DEFAULT_WAIT_MS / 1000} s pass`));
  assert.ok(instructions.includes('An empty answer only means nothing came yet: call it again'));
});

/** Every place in a schema where `type` is an array, as a path (a single-type dialect refuses each). */
function typeArrays(schema: unknown, at: string): string[] {
  if (Array.isArray(schema)) return schema.flatMap((item, i) => typeArrays(item, `${at}/${i}`));
  if (typeof schema !== 'object' || schema === null) return [];
  const here = Array.isArray((schema as { type?: unknown }).type) ? [at] : [];
  return [...here, ...Object.entries(schema).flatMap(([key, value]) => typeArrays(value, `${at}/${key}`))];
}

test('no input or output schema on any door types a property with a type array (single-type dialects refuse ["string","null"])', async () => {
  for (const era of ERAS) {
    for (const door of DOORS) {
      const { tools } = await listing(door, era);
      const found = tools.flatMap((tool) => [...typeArrays(tool.inputSchema, `${tool.name}/input`), ...typeArrays(tool.outputSchema, `${tool.name}/output`)]);
      assert.deepEqual(found, [], `${door} ${era}`);
    }
  }
});
