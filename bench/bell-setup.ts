/**
 * How long setting up one wait's doorbells holds the event loop: 20 listens
 * of 64 fresh names each (a filter's most), in a temp directory, the
 * longest stretch between timer ticks during each. Run it in two checkouts
 * to compare them under the same load:
 *
 *   node --import tsx bench/bell-setup.ts [CHECKOUT]   (default: this one)
 *
 * Wall-clock on a shared machine: the load average goes with the figures.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
type BellsLike = { listen(keys: string[]): unknown; close(): void };
// Where the checkout keeps it: lib/store/hear/ since the store's rooms, lib/store/ before.
const bellsModule = ['lib/store/hear/bells.ts', 'lib/store/bells.ts'].map((file) => path.join(root, file)).find((file) => existsSync(file))!;
const { Bells } = (await import(pathToFileURL(bellsModule).href)) as { Bells: new (dir: string, log: unknown, onRing: () => void, options: object) => BellsLike };
const { silentLogger } = (await import(pathToFileURL(path.join(root, 'lib/log.ts')).href)) as { silentLogger: unknown };

const dir = mkdtempSync(path.join(tmpdir(), 'pe-bell-setup-'));
const bells = new Bells(path.join(dir, 'bells'), silentLogger, () => {}, { lingerMs: 600_000, maxWatched: 100_000 });
let last = performance.now();
let longest = 0;
const ticker = setInterval(() => {
  const now = performance.now();
  longest = Math.max(longest, now - last);
  last = now;
}, 0);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const stalls: number[] = [];
for (let round = 0; round < 20; round++) {
  await pause(5);
  longest = 0;
  last = performance.now();
  await bells.listen(Array.from({ length: 64 }, (_, i) => `to:round-${round}-${i}`)); // a value, not a promise, where listen is synchronous
  await pause(2);
  stalls.push(longest);
}
clearInterval(ticker);
bells.close();
rmSync(dir, { recursive: true, force: true });
stalls.sort((a, b) => a - b);
console.log(`${root}: longest event-loop stall per 64-name set-up, 20 rounds: median ${stalls[10]!.toFixed(1)} ms, max ${stalls[19]!.toFixed(1)} ms (load ${loadavg()[0]!.toFixed(1)})`);
