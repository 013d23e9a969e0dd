import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { openStore } from '../../lib/store/store.js';
import { tempStore } from '../support/helpers.js';

/** Writes `count` whole records straight to disk, as a corpus that already exists when a server starts. */
async function fillCorpus(corpus: string, count: number): Promise<void> {
  const shape = idShape(4);
  for (let i = 1; i <= count; i++) {
    const bytes = Buffer.from(`@p-e/x0\nkind: note\n\nrecord ${i}\n`);
    const deposit = { provenance: 'as-received' as const, depositedBy: 'mcp', depositedAt: new Date(0).toISOString(), digest: digestOf(bytes) };
    writeFileSync(path.join(corpus, shape.format(i)), buildRecordFile(deposit, bytes)); // synchronously: a thread-pool round trip each saved
  }
}

test('open() resolves only once every record on disk is indexed, even when a reconcile runs during the scan', async (t) => {
  const { corpus } = await tempStore(t);
  await fillCorpus(corpus, 1500);
  // A reconcile every millisecond is sure to overlap the start-up scan.
  const store = await openStore({ corpus, reconcileMs: 1 });
  t.after(() => store.close());
  assert.equal(store.size, 1500);
  assert.equal((await store.list()).present.length, 1500);
});
