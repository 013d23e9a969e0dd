/**
 * One process appending to a shared corpus through the store itself (no MCP):
 * serial durable appends for as long as the bench says, then a count.
 */
import { RelayStore } from '../../lib/store.js';
import { nowMs } from '../lib/stats.js';
import { on, send } from './ipc.js';

const [corpus, tag] = process.argv.slice(2) as [string, string];
const store = await RelayStore.prepare({ corpus });
await store.open();
let seq = 0;
const record = () => Buffer.from(`@p-e/x0\nkind: note\nfrom: ${tag}\n\nappend ${seq++} from ${tag}: the swarm reports progress and asks for review.\n`);

on('go', async ({ ms, inFlight = 1 }) => {
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
  await store.close();
  process.exit(0);
});
send({ type: 'ready' });
