/**
 * `npm run bench`: how fast p-e-relay is, against ceilings and a peer
 * measured in the same run. This machine is shared and noisy, so every
 * figure is repeated and printed as a median with min–max, and as a ratio to
 * a reference measured right beside it.
 *
 *   npm run bench                      the full run (a few minutes on 2 cores)
 *   npm run bench -- --quick           a smoke run of every section in under a minute: one repetition,
 *                                      shorter windows and think times, smaller swarms (5 agents), scaling at 1k only,
 *                                      no 8-writer group, no 20-server swarm, no --wake directory swarm;
 *                                      its figures are not for quoting
 *   npm run bench -- --only wake,start a subset of sections (search: text search against grep -rlw)
 *   npm run bench -- --reps 5          more repetitions
 *   npm run bench -- --only start,wake --plot   redraw the scaling plot from the sections run
 *   npm run bench -- --sizes 1000,10000 the corpus sizes of the scaling figures (default 1k, 10k, 100k, 1M;
 *                                      ids of width 6, 7 from a million up)
 *
 * Writes bench/out/last-run.{json,md} (last-quick.* for --quick, last-partial.*
 * for --only) and, on a full run, the scaling plot docs/bench-scaling.svg.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureFreshBuild } from './lib/build.js';
import type { BenchContext, Section } from './lib/context.js';
import { machineLines } from './lib/machine.js';
import { BENCH_OUT, DOCS, ROOT } from './lib/paths.js';
import { markdownTables, Results } from './lib/results.js';
import { scalingMarkdown, scalingSvg } from './lib/scaling.js';
import { agentsSection } from './sections/agents.js';
import { appendSection } from './sections/append.js';
import { bySizeSection } from './sections/by-size.js';
import { callsSection } from './sections/calls.js';
import { checkpointsSection } from './sections/checkpoints.js';
import { claimsSection } from './sections/claims.js';
import { deliverySection } from './sections/delivery.js';
import { doorsSection } from './sections/doors.js';
import { httpSection } from './sections/http.js';
import { onceSection } from './sections/once.js';
import { peerSection } from './sections/peer.js';
import { readsSection } from './sections/reads.js';
import { searchSection } from './sections/search.js';
import { startSection } from './sections/start.js';
import { wakeSection } from './sections/wake.js';

const SECTIONS: Section[] = [appendSection, wakeSection, deliverySection, bySizeSection, agentsSection, doorsSection, callsSection, startSection, readsSection, searchSection, peerSection, httpSection, onceSection, checkpointsSection, claimsSection];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    reps: { type: 'string' },
    sizes: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
    plot: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(`Usage: npm run bench -- [--quick] [--only ${SECTIONS.map((s) => s.name).join(',')}] [--reps N] [--sizes N,N] [--no-build] [--plot]\n`);
  process.exit(0);
}
const quick = values.quick!;
const only = values.only ? values.only.split(',').map((s) => s.trim()) : null;
for (const name of only ?? []) if (!SECTIONS.some((s) => s.name === name)) throw new Error(`no bench section "${name}"; sections: ${SECTIONS.map((s) => s.name).join(', ')}`);

const started = Date.now();
const log = (line: string) => process.stdout.write(`    · ${line}\n`);
process.stdout.write(`p-e-relay bench (${quick ? 'quick' : 'full'} run)\n`);
const machine = await machineLines();
for (const line of machine) process.stdout.write(`  ${line}\n`);
if (!values['no-build']) process.stdout.write(`  ${await ensureFreshBuild()}\n`);

await fs.mkdir(BENCH_OUT, { recursive: true });
const tmp = await fs.mkdtemp(path.join(BENCH_OUT, 'tmp-'));
const results = new Results();
const ctx: BenchContext = {
  quick,
  reps: values.reps ? Number(values.reps) : quick ? 1 : 3,
  results,
  tmp,
  // A million records need ids of 7 digits (init --id-width 7).
  sizes: (values.sizes ? values.sizes.split(',').map(Number) : quick ? [1000] : [1000, 10_000, 100_000, 1_000_000]).map((size) => ({ size, width: size >= 1_000_000 ? 7 : 6 })),
  log,
  window: (full, short) => (quick ? short : full),
};

try {
  for (const section of SECTIONS) {
    if (only && !only.includes(section.name)) continue;
    const t = Date.now();
    process.stdout.write(`\n${section.title}\n`);
    await section.run(ctx);
    process.stdout.write(`    (${((Date.now() - t) / 1000).toFixed(1)} s)\n`);
  }
} finally {
  await fs.rm(tmp, { recursive: true, force: true });
}

const summaries = results.summaries();
machine.push(`load average at the end: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
const command = `npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}`;
const elapsed = ((Date.now() - started) / 1000).toFixed(0);
const markdown = [
  `Command: \`${command}\` — ${elapsed} s, ${ctx.reps} repetitions, ${new Date().toISOString()}`,
  '',
  ...machine.map((l) => `- ${l}`),
  '',
  markdownTables(summaries),
  scalingMarkdown(summaries),
  ...results.notes.map((n) => `- ${n}`),
].join('\n');
const stem = only ? 'last-partial' : quick ? 'last-quick' : 'last-run';
await fs.writeFile(path.join(BENCH_OUT, `${stem}.md`), markdown + '\n');
await fs.writeFile(path.join(BENCH_OUT, `${stem}.json`), JSON.stringify({ command, machine, reps: ctx.reps, elapsedS: Number(elapsed), figures: summaries, notes: results.notes }, null, 2));
const svg = scalingSvg(summaries);
const plot = svg && !quick && (!only || values.plot);
if (plot) await fs.writeFile(path.join(DOCS, 'bench-scaling.svg'), svg);
const missed = summaries.filter((s) => s.met === false);
process.stdout.write(`\n${summaries.length} figures in ${elapsed} s; ${missed.length} below their goal${missed.length ? ': ' + missed.map((s) => s.name).join('; ') : ''}.\n`);
process.stdout.write(`Tables: ${path.relative(ROOT, path.join(BENCH_OUT, `${stem}.md`))}${plot ? `; plot: docs/bench-scaling.svg` : ''}\n`);
