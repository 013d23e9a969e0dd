/**
 * How much memory one store's index holds per record: the heap and the
 * typed-array memory a store adds once it has opened the corpus (from its
 * snapshot), after full garbage collections on both sides. Run with
 * --expose-gc; prints one JSON line.
 */
import { openStore } from '../../lib/store/store.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const used = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const corpus = process.argv[2]!;
const before = used();
const store = await openStore({ corpus, watch: 'none' });
const after = used();
process.stdout.write(JSON.stringify({ records: store.size, bytes: after - before, bytesPerRecord: (after - before) / store.size }) + '\n');
await store.close();
