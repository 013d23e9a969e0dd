// A woken process reads and checks a record once: the indexer's read is
// the one a wait with include_bytes inlines. Reads are counted through the
// store's reader, digest checks by wrapping the hash every digest goes
// through; the writer is another process (the CLI), so that every count
// here is the woken process's own.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { parseFilter } from '../../lib/model/filter.js';
import { openStore } from '../../lib/store/store.js';
import { countingReader } from '../support/counting-reader.js';
import { record, runCli, tempStore } from '../support/helpers.js';

/** Counts sha256 hashes of bytes (a record's digest check; bell names hash strings) until the test ends. */
function countDigests(t: TestContext): { readonly count: number } {
  const crypto = process.getBuiltinModule('node:crypto');
  const hash = crypto.hash;
  const counter = { count: 0 };
  crypto.hash = ((algorithm: string, data: unknown, ...rest: unknown[]) => {
    if (typeof data !== 'string') counter.count++;
    return (hash as (...args: unknown[]) => unknown)(algorithm, data, ...rest);
  }) as typeof crypto.hash;
  t.after(() => {
    crypto.hash = hash;
  });
  return counter;
}

async function appendByCli(corpus: string, text: string): Promise<string> {
  const result = await runCli(['append', '--corpus', corpus], { input: text });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim();
}

for (const how of ['bells', 'directory'] as const) {
  test(`a wait woken by another process's append (${how}) reads and checks the record once, bytes inlined`, async (t) => {
    const { corpus } = await tempStore(t);
    const { reader, reads } = countingReader();
    const store = await openStore({ corpus, reader, bells: how === 'bells' });
    t.after(() => store.close());
    const filter = parseFilter({ to: ['bob'] }, store.shape);
    const waiting = store.wait({ after: store.shape.format(0), filter, includeBytes: true, timeoutMs: 60_000 });
    // Listening (a bell, or the directory) before the append, so that it wakes this wait.
    while (how === 'bells' ? store.listening.bells === 0 : !store.listening.directory) await new Promise((r) => setImmediate(r));
    const digests = countDigests(t);
    const id = await appendByCli(corpus, record({ kind: 'note', from: 'ana', to: 'bob' }, 'for bob'));
    const result = await waiting;
    assert.deepEqual(result.appeared.map((item) => [item.id, item.bytes]), [[id, record({ kind: 'note', from: 'ana', to: 'bob' }, 'for bob')]]);
    assert.equal(reads.get(id), 1, 'the record file was read once');
    assert.equal(digests.count, 1, 'its digest was checked once');
  });
}

test('a catch-up wait with include_bytes reads and checks each record once', async (t) => {
  const { corpus } = await tempStore(t);
  const ids = [await appendByCli(corpus, record({ kind: 'note' }, 'one')), await appendByCli(corpus, record({ kind: 'note' }, 'two'))];
  const { reader, reads } = countingReader();
  const store = await openStore({ corpus, reader });
  t.after(() => store.close());
  reads.clear(); // the start-up scan's reads
  const digests = countDigests(t);
  const result = await store.wait({ after: store.shape.format(0), includeBytes: true, timeoutMs: 0 });
  assert.deepEqual(result.appeared.map((item) => item.bytes), [record({ kind: 'note' }, 'one'), record({ kind: 'note' }, 'two')]);
  assert.deepEqual(ids.map((id) => reads.get(id)), [1, 1], 'each file was read once');
  assert.equal(digests.count, 2, 'each digest was checked once');
});
