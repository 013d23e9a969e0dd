/**
 * What a swarm's size costs each answered question (issue 26). The
 * addressed swarm of bench/lib/swarm.ts at 2, 5, 10, 20 and 40 agents, each
 * its own stdio server on one corpus: saturated (every asker always has a
 * question open) with the lazy index (the default) and with `--index
 * eager` in the same repetition, and paced (each asker thinks 1 s between
 * questions). Per run: the servers' CPU per answered question (/proc) and
 * ask → answer p50; per repetition, the 40-agent CPU over the 5-agent CPU
 * (flat would be 1). Beside them the floor at the same sizes: bare
 * processes woken by and reading every record, no MCP
 * (bench/workers/floor-agent.ts).
 *
 * --quick runs 5 and 20 agents, saturated, lazy only, once (twenty servers' start is most of it).
 */
import type { BenchContext, Section } from '../lib/context.js';
import { emptyCorpus } from '../lib/corpus.js';
import { cpuSecondsOf, relayServer } from '../lib/procs.js';
import { nowMs, percentiles } from '../lib/stats.js';
import { floorSwarm } from '../lib/floor-swarm.js';
import { runSwarm } from '../lib/swarm.js';

const THINK_MS = 1000;

interface SizeRun {
  cpuMsPerQuestion: number;
  p50: number;
}

/** One swarm of `agents` servers; `questions` in all (saturated) or `questionsEach` each (paced). */
async function swarmAt(ctx: BenchContext, agents: number, questionsEach: number, thinkMs: number, serverArgs: string[]): Promise<SizeRun> {
  const store = await emptyCorpus(ctx.tmp, 4);
  const peers = await Promise.all(Array.from({ length: agents }, () => relayServer(store.corpus, serverArgs)));
  try {
    const before = await cpuSecondsOf(peers.map((p) => p.pid));
    const report = await runSwarm(peers, { questionsEach, mode: 'addressed', deadlineMs: 300_000, now: nowMs, thinkMs });
    const cpuMsPerQuestion = (1000 * ((await cpuSecondsOf(peers.map((p) => p.pid))) - before)) / report.answered;
    if (report.answered !== report.asked || report.leaks.length || report.duplicates.length) throw new Error(`${agents}-agent swarm: ${report.answered}/${report.asked} answered, ${report.leaks.length} leaks, ${report.duplicates.length} duplicates`);
    return { cpuMsPerQuestion, p50: percentiles(report.latencies, [0.5])[0]! };
  } finally {
    await Promise.all(peers.map((p) => p.close()));
    await store.dispose();
  }
}

/** The same plan by bare processes (bench/lib/floor-swarm.ts). */
async function floorAt(ctx: BenchContext, agents: number, questionsEach: number): Promise<SizeRun> {
  const { latencies, cpuMsPerQuestion } = await floorSwarm(ctx, agents, questionsEach);
  return { cpuMsPerQuestion, p50: percentiles(latencies, [0.5])[0]! };
}

export const bySizeSection: Section = {
  name: 'sizes',
  title: 'A swarm by size: CPU per answered question at 2–40 agents, lazy and eager index (issue 26)',
  async run(ctx) {
    const sizes = ctx.quick ? [5, 20] : [2, 5, 10, 20, 40];
    const questions = ctx.quick ? 40 : 200;
    const reps = ctx.quick ? 1 : ctx.reps;
    const v: Record<string, number[]> = {};
    const put = (key: string, x: number) => (v[key] ??= []).push(x);
    const kinds = ctx.quick ? (['lazy'] as const) : (['lazy', 'eager', 'paced', 'floor'] as const);
    for (let r = 0; r < reps; r++) {
      for (const agents of sizes) {
        const each = Math.ceil(questions / agents);
        for (const kind of kinds) {
          const run =
            kind === 'floor' ? await floorAt(ctx, agents, each)
            : kind === 'paced' ? await swarmAt(ctx, agents, 5, THINK_MS, [])
            : await swarmAt(ctx, agents, each, 0, kind === 'eager' ? ['--index', 'eager'] : []);
          put(`${kind}.${agents}.cpu`, run.cpuMsPerQuestion);
          put(`${kind}.${agents}.p50`, run.p50);
          ctx.log(`${agents} agents, ${kind}: ${run.cpuMsPerQuestion.toFixed(1)} ms of CPU per question, ask→answer p50 ${run.p50.toFixed(1)} ms`);
        }
      }
      const [small, large] = [sizes[0] === 2 ? sizes[1]! : sizes[0]!, sizes.at(-1)!];
      for (const kind of kinds) put(`${kind}.growth`, v[`${kind}.${large}.cpu`]!.at(-1)! / v[`${kind}.${small}.cpu`]!.at(-1)!);
    }
    const section = 'Swarm by size';
    const what = { lazy: 'saturated', eager: 'saturated, servers started with --index eager', paced: `paced (${THINK_MS} ms thinking)`, floor: 'the floor (bare processes, no MCP), saturated' };
    for (const agents of sizes) {
      for (const kind of kinds) {
        const reference = kind === 'lazy' && !ctx.quick ? { name: 'the same with --index eager', values: v[`eager.${agents}.cpu`]! } : undefined;
        ctx.results.add({ section, name: `${agents} agents, ${what[kind]}: servers' CPU per answered question (/proc)`, unit: 'ms', values: v[`${kind}.${agents}.cpu`]!, reference });
        const floor = kind === 'lazy' && !ctx.quick ? { name: 'the floor at this size, p50', values: v[`floor.${agents}.p50`]! } : undefined;
        ctx.results.add({ section, name: `${agents} agents, ${what[kind]}: ask → answer p50`, unit: 'ms', values: v[`${kind}.${agents}.p50`]!, reference: floor });
      }
    }
    const [small, large] = [sizes[0] === 2 ? sizes[1]! : sizes[0]!, sizes.at(-1)!];
    for (const kind of kinds) {
      const goal = kind === 'lazy' ? { on: 'value' as const, op: '<=' as const, target: 1.5, source: 'issue 26' } : undefined;
      ctx.results.add({ section, name: `${what[kind]}: CPU per question at ${large} agents over at ${small} (1 is flat)`, unit: '×', values: v[`${kind}.growth`]!, goal });
    }
  },
};
