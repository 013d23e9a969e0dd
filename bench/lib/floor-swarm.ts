/**
 * The floor of a swarm: the same addressed ask-and-answer plan run by bare
 * processes (bench/workers/floor-agent.ts), each woken by every record and
 * reading it, publishing as the store does, with no MCP and no index. Its
 * ask → answer latencies and CPU per question are what `agents` processes
 * cost on this machine before the relay adds anything.
 */
import type { BenchContext } from './context.js';
import { emptyCorpus } from './corpus.js';
import { cpuSecondsOf, forkWorker } from './procs.js';

export async function floorSwarm(ctx: BenchContext, agents: number, questionsEach: number): Promise<{ latencies: number[]; cpuMsPerQuestion: number }> {
  const store = await emptyCorpus(ctx.tmp, 4);
  const workers = Array.from({ length: agents }, (_, i) => forkWorker('floor-agent', [store.corpus, String(i), String(agents), String(questionsEach)]));
  try {
    await Promise.all(workers.map((w) => w.next('ready')));
    const pids = workers.map((w) => w.child.pid!);
    const before = await cpuSecondsOf(pids);
    const done = Promise.all(workers.map((w) => w.next<{ latencies: number[] }>('done')));
    for (const w of workers) w.send({ type: 'go' });
    const latencies = (await done).flatMap((d) => d.latencies);
    return { latencies, cpuMsPerQuestion: (1000 * ((await cpuSecondsOf(pids)) - before)) / latencies.length };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await store.dispose();
  }
}
