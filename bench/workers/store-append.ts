/**
 * One process appending through the store itself (no MCP): it opens one
 * store per corpus it is given, and on each `go` appends serially to the one
 * named, for as long as the bench says, then reports a count. One process
 * serves every group it belongs to (1, 4 and 8 writers), which saves spawns.
 */
import { RelayStore } from '../../lib/store/store.js';
import { nowMs } from '../lib/stats.js';
import { on, send } from './ipc.js';

const [tag, ...corpora] = process.argv.slice(2) as [string, ...string[]];
const stores = new Map<string, RelayStore>();
for (const corpus of corpora) {
  const store = await RelayStore.prepare({ corpus });
  await store.open();
  stores.set(corpus, store);
}
let seq = 0;
const record = () => Buffer.from(`@p-e/x0\nkind: note\nfrom: ${tag}\n\nappend ${seq++} from ${tag}: the swarm reports progress and asks for review.\n`);

on('go', async ({ ms, corpus, inFlight = 1 }) => {
  const store = stores.get(corpus)!;
  const start = nowMs();
  let count = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (nowMs() - start < ms) {
        await store.append(record(), { depositedBy: 'mcp' });
        count++;
      }
    }),
  );
  send({ type: 'done', count, start, end: nowMs() });
});
on('close', async () => {
  for (const store of stores.values()) await store.close();
  process.exit(0);
});
send({ type: 'ready' });
