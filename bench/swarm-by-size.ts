/**
 * The saturated swarm of the bench (bench/lib/swarm.ts, addressed loop, no
 * thinking time) at several sizes, to show how the CPU each answered
 * question costs grows with the number of agents: every server indexes
 * every record (a cursor must cover them), so each agent added costs each
 * question two more reads, and twenty processes on two cores pay more for
 * every call than two do.
 *
 *   node --import tsx bench/swarm-by-size.ts [sizes] [questions in all]
 *   node --import tsx bench/swarm-by-size.ts 2,4,10,20 400      the default
 *
 * Servers are the built launcher (bin/p-e-relay, its shebang's node flags
 * applying), as the bench spawns them: run `npm run build` first. One line
 * of JSON per size on stdout: agents, questions, CPU of the servers and of
 * this process (the SDK clients) per answered question (/proc and
 * process.cpuUsage), ask → answer p50/p90, and the least mean the CPU
 * allows (agents × CPU per question / cores, Little's law) beside the mean.
 */
import os from 'node:os';
import { emptyCorpus } from './lib/corpus.js';
import { cpuSecondsOf, relayServer } from './lib/procs.js';
import { nowMs, percentiles } from './lib/stats.js';
import { runSwarm } from './lib/swarm.js';

const sizes = (process.argv[2] ?? '2,4,10,20').split(',').map(Number);
const questions = Number(process.argv[3] ?? 400);
const tmp = os.tmpdir();

for (const agents of sizes) {
  const store = await emptyCorpus(tmp, 4);
  const peers = await Promise.all(Array.from({ length: agents }, () => relayServer(store.corpus)));
  const cpu = () => cpuSecondsOf(peers.map((p) => p.pid));
  try {
    const before = await cpu();
    const client = process.cpuUsage();
    const report = await runSwarm(peers, { questionsEach: Math.ceil(questions / agents), mode: 'addressed', deadlineMs: 300_000, now: nowMs });
    const { user, system } = process.cpuUsage(client);
    const servers = (1000 * ((await cpu()) - before)) / report.answered;
    const clients = (user + system) / 1000 / report.answered;
    const [p50, p90] = percentiles(report.latencies, [0.5, 0.9]);
    const mean = report.latencies.reduce((a, b) => a + b, 0) / report.latencies.length;
    const round = (x: number) => Math.round(x * 10) / 10;
    process.stdout.write(
      JSON.stringify({ agents, questions: report.answered, serverCpuMsPerQuestion: round(servers), clientCpuMsPerQuestion: round(clients), p50Ms: round(p50!), p90Ms: round(p90!), meanMs: round(mean), cpuBoundMeanMs: round((agents * (servers + clients)) / os.availableParallelism()), load: os.loadavg()[0]!.toFixed(1) }) + '\n',
    );
  } finally {
    await Promise.all(peers.map((p) => p.close()));
    await store.dispose();
  }
}
