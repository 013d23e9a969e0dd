/**
 * What a swarm's size costs each answered question. The
 * addressed swarm of bench/lib/swarm.ts at 2, 5, 10, 20 and 40 agents, each
 * its own stdio server on one corpus: saturated (every asker always has a
 * question open) and paced (each asker thinks 1 s between questions). Per run: the servers' CPU per answered question (/proc) and
 * ask → answer p50; per repetition, the 40-agent CPU over the 5-agent CPU
 * (flat would be 1). Beside them the floor at the same sizes: bare
 * processes woken by and reading every record, no MCP
 * (bench/workers/floor-agent.ts).
 *
 * A saturated run of 200 questions gives each of 40 servers five questions
 * to ask, and a server's first calls run in V8's interpreter, before it has
 * optimised them (measured: 22.7 ms a question over 1,200 questions at 40
 * agents, 16.2 over 4,800). That start is paid once per process, so the warm run first
 * has every agent ask WARM_EACH questions that are not counted, then
 * measures WARM_QUESTIONS more on the same servers: what a swarm that has
 * been running pays for one more question.
 *
 * --quick runs 5 and 10 agents, saturated only, once (the servers' start is most of it).
 */
import type { BenchContext, Section } from '../lib/context.js';
import { emptyCorpus } from '../lib/corpus.js';
import { cpuSecondsOf, relayServer } from '../lib/procs.js';
import { nowMs, percentiles } from '../lib/stats.js';
import { floorSwarm } from '../lib/floor-swarm.js';
import { runSwarm } from '../lib/swarm.js';

const THINK_MS = 1000;
/** Questions each agent asks before a warm run is measured, the same at every size, so every server starts as warm. */
const WARM_EACH = 100;
/** Questions in all in a warm run's measured part. */
const WARM_QUESTIONS = 800;
/** A warm run's ids: wide enough for 40 agents' warm-up and the measured part (9,999 would not be). */
const WARM_ID_WIDTH = 5;

interface SizeRun {
  cpuMsPerQuestion: number;
  p50: number;
}

/** One swarm of `agents` servers, `questionsEach` questions each, measured after `warmEach` each that are not. */
async function swarmAt(ctx: BenchContext, agents: number, questionsEach: number, thinkMs: number, serverArgs: string[], warmEach = 0): Promise<SizeRun> {
  const width = warmEach > 0 ? WARM_ID_WIDTH : 4;
  const store = await emptyCorpus(ctx.tmp, width);
  const peers = await Promise.all(Array.from({ length: agents }, () => relayServer(store.corpus, serverArgs)));
  try {
    const start = `relay-${'0'.repeat(width)}`;
    const warm = warmEach > 0 ? await runSwarm(peers, { questionsEach: warmEach, mode: 'addressed', deadlineMs: 300_000, now: nowMs, after: start }) : null;
    const before = await cpuSecondsOf(peers.map((p) => p.pid));
    const report = await runSwarm(peers, { questionsEach, mode: 'addressed', deadlineMs: 300_000, now: nowMs, thinkMs, after: warm?.cursor });
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
  title: 'A swarm by size: CPU per answered question at 2–40 agents, saturated, warm and paced',
  async run(ctx) {
    const sizes = ctx.quick ? [5, 10] : [2, 5, 10, 20, 40];
    const questions = ctx.quick ? 20 : 200;
    const reps = ctx.quick ? 1 : ctx.reps;
    const v: Record<string, number[]> = {};
    const put = (key: string, x: number) => (v[key] ??= []).push(x);
    const kinds = ctx.quick ? (['lazy'] as const) : (['lazy', 'warm', 'paced', 'floor'] as const);
    for (let r = 0; r < reps; r++) {
      for (const agents of sizes) {
        const each = Math.ceil(questions / agents);
        for (const kind of kinds) {
          const run =
            kind === 'floor' ? await floorAt(ctx, agents, each)
            : kind === 'paced' ? await swarmAt(ctx, agents, 5, THINK_MS, [])
            : kind === 'warm' ? await swarmAt(ctx, agents, Math.ceil(WARM_QUESTIONS / agents), 0, [], WARM_EACH)
            : await swarmAt(ctx, agents, each, 0, []);
          put(`${kind}.${agents}.cpu`, run.cpuMsPerQuestion);
          put(`${kind}.${agents}.p50`, run.p50);
          ctx.log(`${agents} agents, ${kind}: ${run.cpuMsPerQuestion.toFixed(1)} ms of CPU per question, ask→answer p50 ${run.p50.toFixed(1)} ms`);
        }
      }
      const [small, large] = [sizes[0] === 2 ? sizes[1]! : sizes[0]!, sizes.at(-1)!];
      for (const kind of kinds) put(`${kind}.growth`, v[`${kind}.${large}.cpu`]!.at(-1)! / v[`${kind}.${small}.cpu`]!.at(-1)!);
    }
    const section = 'Swarm by size';
    const what = { lazy: 'saturated', warm: `saturated, warm (after ${WARM_EACH} questions each)`, paced: `paced (${THINK_MS} ms thinking)`, floor: 'the floor (bare processes, no MCP), saturated' };
    for (const agents of sizes) {
      for (const kind of kinds) {
        const reference = kind === 'lazy' && !ctx.quick ? { name: 'the floor at this size', values: v[`floor.${agents}.cpu`]! } : undefined;
        ctx.results.add({ section, name: `${agents} agents, ${what[kind]}: servers' CPU per answered question (/proc)`, unit: 'ms', values: v[`${kind}.${agents}.cpu`]!, reference });
        const floor = kind === 'lazy' && !ctx.quick ? { name: 'the floor at this size, p50', values: v[`floor.${agents}.p50`]! } : undefined;
        ctx.results.add({ section, name: `${agents} agents, ${what[kind]}: ask → answer p50`, unit: 'ms', values: v[`${kind}.${agents}.p50`]!, reference: floor });
      }
    }
    const [small, large] = [sizes[0] === 2 ? sizes[1]! : sizes[0]!, sizes.at(-1)!];
    for (const kind of kinds) {
      const goal = kind === 'lazy' || kind === 'warm' ? { on: 'value' as const, op: '<=' as const, target: 1.5, source: 'issue 26' } : undefined;
      ctx.results.add({ section, name: `${what[kind]}: CPU per question at ${large} agents over at ${small} (1 is flat)`, unit: '×', values: v[`${kind}.growth`]!, goal });
    }
  },
};
