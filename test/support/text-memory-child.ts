/**
 * A child process for the text index's memory test: appends hostile records
 * (many distinct short words, none repeated across records) to a fresh
 * store, then searches, and prints on stdout what the heap grew by (with
 * `global.gc`, so the figure is what stays held), as one JSON line.
 *
 *   node --expose-gc --import tsx text-memory-child.ts CORPUS RECORDS WORDS [BUDGET_BYTES]
 */
import { RelayError } from '../../lib/errors.js';
import { parseFilter } from '../../lib/model/filter.js';
import { openStore } from '../../lib/store/store.js';
import { record } from './helpers.js';

const [corpus, records, words, budget] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const held = () => {
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
};

const store = await openStore({ corpus: corpus!, watch: 'none', ...(budget ? { textIndex: { bytes: Number(budget) } } : {}) });
let next = 0;
let bytes = 0;
const word = () => 'w' + (next++).toString(36); // distinct across every record, 4-5 characters
for (let r = 0; r < Number(records); r++) {
  const body = Array.from({ length: Number(words) }, word).join(' ');
  bytes += Buffer.byteLength(body);
  await store.append(Buffer.from(record({ kind: 'note' }, body)), { depositedBy: 'cli/test' });
}
const before = held();
let refused: string | null = null;
const search = async (text: string) => (await store.listIds(undefined, parseFilter({ text }, store.shape))).present;
let found: number[] = [];
try {
  found = await search('w0');
} catch (err) {
  if (!(err instanceof RelayError)) throw err;
  refused = err.code;
}
const after = held();
await store.close();
process.stdout.write(JSON.stringify({ bytes, grew: after - before, found, refused }) + '\n');
