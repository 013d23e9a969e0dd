/**
 * A swarm's cold start against its warm one: twenty stdio servers started at
 * once on a copy of the 9,999-record corpus, first with no `.state/` at all
 * (a fresh clone, an rsync mirror, `rm -rf .state`), then again with the
 * index snapshot the cold start left; beside twenty bare SDK servers. Each
 * figure is the CPU time the twenty used until all had answered `exists` on
 * the newest record (the index is needed for it), in all.
 *
 *   node --import tsx bench/cold-swarm.ts [reps]      (default 3; run `npm run build` first)
 *
 * The start section's full run reports the same rows (bench/sections/start.ts).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bareServerBundle } from './lib/build.js';
import { cachedCorpus, copyCorpus } from './lib/corpus.js';
import { coldSwarmOnce, type SwarmStart } from './lib/cold-swarm.js';
import { spread } from './lib/stats.js';

const reps = Number(process.argv[2] ?? 3);
const source = await cachedCorpus(9999, 4, (line) => console.error(line));
const copy = await copyCorpus(source, os.tmpdir());
try {
  const bundle = await bareServerBundle();
  const runs: SwarmStart[] = [];
  for (let r = 0; r < reps; r++) {
    await fs.rm(path.join(copy.corpus, '.state'), { recursive: true, force: true });
    runs.push(await coldSwarmOnce(copy.corpus, bundle));
    const last = runs.at(-1)!;
    console.error(`rep ${r + 1}: cold ${last.coldCpuS.toFixed(2)} CPU-s (${last.coldMs} ms), warm ${last.warmCpuS.toFixed(2)} CPU-s (${last.warmMs} ms), bare ${last.bareCpuS.toFixed(2)} CPU-s`);
  }
  const m = (pick: (s: SwarmStart) => number) => spread(runs.map(pick)).median;
  console.log(JSON.stringify({
    reps,
    coldCpuS: m((s) => s.coldCpuS),
    warmCpuS: m((s) => s.warmCpuS),
    bareCpuS: m((s) => s.bareCpuS),
    coldOverWarm: m((s) => s.coldCpuS / s.warmCpuS),
    coldOverBare: m((s) => s.coldCpuS / s.bareCpuS),
    warmOverBare: m((s) => s.warmCpuS / s.bareCpuS),
    coldMs: m((s) => s.coldMs),
    warmMs: m((s) => s.warmMs),
  }));
} finally {
  await copy.dispose();
}
