/**
 * list_relays past its cap (LIST_MAX_IDS): refused with too_large and the
 * `after` that fits, never a message the client's stdio transport drops.
 * 208,000 ids come cheaply from 3,200 records that each cite 64 ids not
 * held (known missing), so the corpus is written in well under a second.
 * The client is the SDK's own stdio client with its default 10 MiB line limit.
 * Every test here only reads, so they share one corpus and one server: the
 * corpus and the server's scan of it are most of the time.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { LIST_MAX_IDS } from '../../lib/mcp/tools/list-relays.js';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { MAX_NAMED_IDS } from '../../lib/model/record.js';
import { sharedCleanup, type Cleanup } from '../support/cleanup.js';
import { errorCode, stdioClient, tempStore, textOf } from '../support/helpers.js';

const RECORDS = 3_200;
const CITED_FROM = 1_000_000; // far above the held ids: every cited id is known missing
const id = (n: number) => `relay-${String(n).padStart(7, '0')}`;

async function corpusOfManyIds(t: Cleanup): Promise<string> {
  const { corpus } = await tempStore(t, { idWidth: 7 });
  for (let i = 1; i <= RECORDS; i++) {
    const refs = Array.from({ length: MAX_NAMED_IDS }, (_, k) => id(CITED_FROM + (i - 1) * MAX_NAMED_IDS + k));
    const bytes = Buffer.from(['@p-e/x0', 'kind: note', `from: agent-${i % 5}`, `ref: ${refs.join(' ')}`, '', `record ${i}`].join('\n'));
    const deposit = { provenance: 'as-received' as const, depositedBy: 'test', depositedAt: new Date(0).toISOString(), digest: digestOf(bytes) };
    writeFileSync(path.join(corpus, id(i)), buildRecordFile(deposit, bytes)); // synchronously: thousands of thread-pool round trips saved
  }
  return corpus;
}

const TOTAL = RECORDS + RECORDS * MAX_NAMED_IDS;

const file = sharedCleanup();
after(() => file.run());
let shared: Promise<Client> | null = null;
/** The file's server over its corpus of many ids, started by the first test that asks. */
const client = () => (shared ??= corpusOfManyIds(file).then(async (corpus) => (await stdioClient(file, corpus)).client));

test('list_relays over its cap is refused with too_large, the count, the cap and the after that fits', async () => {
  assert.ok(TOTAL > LIST_MAX_IDS);
  const result = (await (await client()).callTool({ name: 'list_relays', arguments: {} }, { timeout: 60_000 })) as CallToolResult;
  assert.equal(result.isError, true);
  assert.equal(errorCode(result), 'too_large');
  const details = (result._meta as Record<string, { ids: number; limit: number; after: string }>)['p-e-relay/error']!;
  assert.equal(details.ids, TOTAL);
  assert.equal(details.limit, LIST_MAX_IDS);
  // The newest LIST_MAX_IDS ids are all known missing here: the after is the one just below them.
  assert.equal(details.after, id(CITED_FROM + RECORDS * MAX_NAMED_IDS - LIST_MAX_IDS - 1));
  assert.match(textOf(result), new RegExp(`after: "${details.after}"`));
  assert.equal(result.structuredContent, undefined);
});

test('the after a too_large refusal names answers exactly the cap, and the SDK stdio client receives it whole', async () => {
  const refused = (await (await client()).callTool({ name: 'list_relays', arguments: {} }, { timeout: 60_000 })) as CallToolResult;
  const { after } = (refused._meta as Record<string, { after: string }>)['p-e-relay/error']!;
  const result = (await (await client()).callTool({ name: 'list_relays', arguments: { after } }, { timeout: 60_000 })) as CallToolResult;
  assert.equal(result.isError, undefined, textOf(result));
  const s = result.structuredContent as { present: string[]; knownMissing: string[] };
  assert.equal(s.present.length + s.knownMissing.length, LIST_MAX_IDS);
  assert.ok(s.knownMissing.every((x) => x > after) && s.present.every((x) => x > after));
  const [present, missing] = textOf(result).split('\n');
  assert.ok(present!.startsWith(`present (${s.present.length}):`) && missing!.startsWith(`known missing (${s.knownMissing.length}): `));
});

test('a filter that narrows the list under the cap answers it whole', async () => {
  const result = (await (await client()).callTool({ name: 'list_relays', arguments: { from: 'agent-1' } }, { timeout: 60_000 })) as CallToolResult;
  assert.equal(result.isError, undefined, textOf(result));
  const s = result.structuredContent as { present: string[]; knownMissing: string[] };
  assert.equal(s.present.length, RECORDS / 5);
  assert.deepEqual(s.knownMissing, []);
});
