/**
 * Addressed delivery (spec §8a), in LLM-visible calls and milliseconds.
 *
 * The swarm: 20 agents, each its own `serve` process over stdio on one
 * corpus, each asking 10 questions (200 in all) one at a time and answering
 * what is addressed to it (bench/lib/swarm.ts). Run twice in the same
 * repetition: the unfiltered loop (every record wakes every agent, which
 * reads the metadata itself) and the addressed loop (`to: [me, "all"]`:
 * the hub decides). Figures: the share of wait answers that carried nothing
 * for the agent that paid for them, ask → answer in hand, and tool calls per
 * answered question.
 *
 * The cost of a filter: one stdio server holding 20 waits, each filtered to
 * another name, is woken by an append (in another process) addressed to one
 * of them; against one unfiltered wait in the same repetition.
 */
import os from 'node:os';
import type { BenchContext, Section } from '../lib/context.js';
import { emptyCorpus } from '../lib/corpus.js';
import { floorSwarm } from '../lib/floor-swarm.js';
import { cpuSecondsOf, forkWorker, relayServer, type StdioPeer } from '../lib/procs.js';
import { nowMs, percentiles, sleep } from '../lib/stats.js';
import { agentName, runSwarm, type SwarmMode, type SwarmReport } from '../lib/swarm.js';
import { readSettings } from '../../lib/disk/settings.js';
import { idShape } from '../../lib/model/ids.js';

const AGENTS = 20;
/** The swarm's size in this run: AGENTS, or 5 with --quick (a smoke run: twenty servers' starts are most of a quick run). */
let agents = AGENTS;
/** The paced swarm's think time between an answer and the asker's next question: a model's turn takes at least this. */
const THINK_MS = 1000;
/** The same with --quick, a smoke run whose figures are not quoted: the pacing is what it checks, not its length. */
const QUICK_THINK_MS = 250;


/**
 * With no thinking time every agent always has a question open, so by
 * Little's law the mean ask → answer is agents / throughput, and throughput
 * is at most cores / (CPU per question). This is that least mean: what the
 * machine allows at the CPU the run measured, whatever the store does with it.
 */
const cpuBoundMs = (cpuMsPerQuestion: number) => (agents * cpuMsPerQuestion) / os.availableParallelism();

interface SwarmRun extends SwarmReport {
  /** CPU of the 20 servers per answered question. */
  cpuMsPerQuestion: number;
  /** CPU of this process per answered question: the 20 SDK clients standing in for the agents' hosts. */
  clientCpuMsPerQuestion: number;
}

async function swarm(ctx: BenchContext, mode: SwarmMode, questionsEach: number, thinkMs = 0, serverArgs: string[] = []): Promise<SwarmRun> {
  const store = await emptyCorpus(ctx.tmp, 4);
  const peers = await Promise.all(Array.from({ length: agents }, () => relayServer(store.corpus, serverArgs)));
  try {
    const before = await cpuSecondsOf(peers.map((p) => p.pid));
    const client = process.cpuUsage();
    const report = await runSwarm(peers, { questionsEach, mode, deadlineMs: 300_000, now: nowMs, thinkMs });
    const { user, system } = process.cpuUsage(client);
    const clientCpuMsPerQuestion = (user + system) / 1000 / report.answered;
    const cpuMsPerQuestion = (1000 * ((await cpuSecondsOf(peers.map((p) => p.pid))) - before)) / report.answered;
    if (report.answered !== report.asked) throw new Error(`${mode} swarm: ${report.answered} of ${report.asked} questions answered`);
    if (report.leaks.length || report.duplicates.length) throw new Error(`${mode} swarm: ${report.leaks.length} records past a filter, ${report.duplicates.length} seen twice`);
    return { ...report, cpuMsPerQuestion, clientCpuMsPerQuestion };
  } finally {
    await Promise.all(peers.map((p) => p.close()));
    await store.dispose();
  }
}

/**
 * What one record costs each process that is not its writer and not its
 * recipient: BYSTANDERS stdio servers woken by bells (the default), as
 * many started with `--wake directory` (woken by every record), each holding a wait filtered to a name no record carries, as a
 * swarm agent does, and as many bare floor processes (floor-agent.ts with
 * nothing to ask: fs.watch and a read per record) watch one corpus while
 * another server appends `n` records; CPU from /proc per process per
 * record. With bells a bystander reads the records only when it next
 * answers (here: when its wait ends, after the appends).
 */
const BYSTANDERS = 5;
async function bystanderCpu(corpus: string, n: number): Promise<{ bells: number; directory: number; floor: number }> {
  const writer = await relayServer(corpus);
  const belled = await Promise.all(Array.from({ length: BYSTANDERS }, () => relayServer(corpus)));
  const watching = await Promise.all(Array.from({ length: BYSTANDERS }, () => relayServer(corpus, ['--wake', 'directory'])));
  const floors = Array.from({ length: BYSTANDERS }, () => forkWorker('floor-agent', [corpus, '0', '1', '0']));
  const servers = [...belled, ...watching];
  try {
    const zero = await zeroOf(corpus);
    await Promise.all(floors.map((f) => f.next('ready')));
    await Promise.all(servers.map((s) => s.call('wait_for_relay', { to: 'nobody-at-all', after: zero, timeout_ms: 0 })));
    const blocked = servers.map((s) => s.call('wait_for_relay', { to: 'nobody-at-all', after: zero, timeout_ms: 90_000 }));
    await sleep(300);
    const pids = { bells: belled.map((s) => s.pid), directory: watching.map((s) => s.pid), floor: floors.map((f) => f.child.pid!) };
    const before = { bells: await cpuSecondsOf(pids.bells), directory: await cpuSecondsOf(pids.directory), floor: await cpuSecondsOf(pids.floor) };
    for (let i = 0; i < n; i++) await writer.call('append_relay', { bytes: `@p-e/x0\nkind: ping\nfrom: bench\nto: reader-${i % agents}\n\nrecord ${i}\n` });
    // One record for the bystanders ends their waits: each has then read every record, so the bells' deferred reads are counted.
    await writer.call('append_relay', { bytes: '@p-e/x0\nkind: ping\nfrom: bench\nto: nobody-at-all\n\nthe end\n' });
    await Promise.all(blocked);
    await sleep(300);
    const per = (cpuS: number) => (1000 * cpuS) / BYSTANDERS / n;
    return { bells: per((await cpuSecondsOf(pids.bells)) - before.bells), directory: per((await cpuSecondsOf(pids.directory)) - before.directory), floor: per((await cpuSecondsOf(pids.floor)) - before.floor) };
  } finally {
    await Promise.all([writer, ...servers].map((p) => p.close()));
    await Promise.all(floors.map((f) => f.stop()));
  }
}

/** The corpus's zero id ("everything held"), at its width: these servers have no agent, so their waits name a place. */
const zeroOf = async (corpus: string) => idShape((await readSettings(corpus)).idWidth).format(0);

const append = (peer: StdioPeer, to: string, i: number) => peer.call('append_relay', { bytes: `@p-e/x0\nkind: ping\nfrom: bench\nto: ${to}\n\nwake ${i}\n` });
const cursorOf = (r: { structuredContent?: unknown }) => (r.structuredContent as { cursor: string }).cursor;

/** Wake samples in B for appends in A, with `filtered` 20 waits each for its own name, else one wait for anything. */
async function wakeSamples(corpus: string, n: number, filtered: boolean): Promise<number[]> {
  const [a, b] = await Promise.all([relayServer(corpus), relayServer(corpus)]);
  const samples: number[] = [];
  try {
    let cursor = cursorOf(await b.call('wait_for_relay', { after: await zeroOf(corpus), timeout_ms: 0, include_bytes: false }));
    const names = Array.from({ length: agents }, (_, i) => agentName(i));
    const waits = new Map<string, Promise<{ t: number; r: Awaited<ReturnType<StdioPeer['call']>> }>>();
    const start = (name: string | null) =>
      b.call('wait_for_relay', { after: cursor, timeout_ms: 60_000, ...(name ? { to: name } : {}) }).then((r) => ({ t: nowMs(), r }));
    if (filtered) for (const name of names) waits.set(name, start(name));
    for (let i = 0; i < n; i++) {
      const target = filtered ? names[i % agents]! : null;
      if (!filtered) waits.set('any', start(null));
      await sleep(5); // let the (re-)issued wait reach B and block there
      const t0 = nowMs();
      const sent = await append(a, target ?? 'anyone', i);
      const key = target ?? 'any';
      const { t, r } = await waits.get(key)!;
      const id = (sent.structuredContent as { id: string }).id;
      const got = (r.structuredContent as { appeared: { id: string }[] }).appeared.map((x) => x.id);
      if (!got.includes(id)) throw new Error(`the wait for ${key} answered ${got.join(',') || 'nothing'} instead of ${id}`);
      samples.push(t - t0);
      cursor = cursorOf(r);
      // The other waits stay blocked (their after is older, but nothing new is addressed to them).
      if (filtered) waits.set(key, start(key));
    }
    // End the waits still blocked: one record addressed to each.
    if (filtered) for (const [i, name] of names.entries()) await append(a, name, n + i);
    await Promise.all(waits.values());
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
  return samples;
}

export const deliverySection: Section = {
  name: 'delivery',
  title: 'Addressed delivery: a swarm of 20 stdio agents, and what a filter costs a wake',
  async run(ctx) {
    const { results, reps } = ctx;
    agents = ctx.quick ? 5 : AGENTS;
    const questionsEach = ctx.quick ? 2 : 10;
    const thinkMs = ctx.quick ? QUICK_THINK_MS : THINK_MS;
    const v: Record<string, number[]> = {};
    const put = (key: string, x: number) => (v[key] ??= []).push(x);
    const pooled: number[] = [];
    for (let r = 0; r < reps; r++) {
      for (const mode of ['unfiltered', 'addressed'] as const) {
        const report = await swarm(ctx, mode, questionsEach);
        put(`${mode}.empty`, (100 * report.emptyWaits) / report.waits);
        put(`${mode}.calls`, report.calls / report.answered);
        put(`${mode}.askerCalls`, report.askerCalls.reduce((a, b) => a + b, 0) / report.askerCalls.length);
        const [p50, p90] = percentiles(report.latencies, [0.5, 0.9]);
        put(`${mode}.p50`, p50!);
        put(`${mode}.p90`, p90!);
        put(`${mode}.cpu`, report.cpuMsPerQuestion);
        put(`${mode}.mean`, report.latencies.reduce((a, b) => a + b, 0) / report.latencies.length);
        put(`${mode}.bound`, cpuBoundMs(report.cpuMsPerQuestion + report.clientCpuMsPerQuestion));
        if (mode === 'addressed') pooled.push(...report.latencies);
        ctx.log(`${mode}: ${report.asked} questions, ${report.waits} waits (${report.emptyWaits} empty), ${report.calls} calls, ask→answer p50 ${p50!.toFixed(1)} ms`);
      }
      const paced = await swarm(ctx, 'addressed', questionsEach, thinkMs);
      const [z50, z90] = percentiles(paced.latencies, [0.5, 0.9]);
      put('paced.p50', z50!);
      put('paced.p90', z90!);
      put('paced.cpu', paced.cpuMsPerQuestion);
      ctx.log(`paced: ${paced.asked} questions, each asker thinking ${thinkMs} ms between them, ask→answer p50 ${z50!.toFixed(1)} ms`);
      // --quick leaves the --wake directory swarm out: the bystander figures below still run that mode.
      if (!ctx.quick) {
        const watching = await swarm(ctx, 'addressed', questionsEach, thinkMs, ['--wake', 'directory']);
        const [d50] = percentiles(watching.latencies, [0.5]);
        put('paced.directory.p50', d50!);
        put('paced.directory.cpu', watching.cpuMsPerQuestion);
        ctx.log(`paced, servers started with --wake directory: ask→answer p50 ${d50!.toFixed(1)} ms`);
      }
      const { latencies: floor, cpuMsPerQuestion } = await floorSwarm(ctx, agents, questionsEach);
      const [f50, f90] = percentiles(floor, [0.5, 0.9]);
      put('floor.p50', f50!);
      put('floor.p90', f90!);
      put('floor.cpu', cpuMsPerQuestion);
      put('floor.mean', floor.reduce((a, b) => a + b, 0) / floor.length);
      put('floor.bound', cpuBoundMs(cpuMsPerQuestion));
      ctx.log(`floor: ${floor.length} questions by ${agents} bare processes, ask→answer p50 ${f50!.toFixed(1)} ms`);
    }
    const section = 'Delivery';
    const swarmName = `swarm of ${agents} stdio agents, ${agents * questionsEach} questions`;
    results.add({ section, name: `${swarmName}: wait answers carrying nothing for the agent, addressed loop`, unit: '%', values: v['addressed.empty']!, goal: { on: 'value', op: '<=', target: 2, source: 'issue 12' } });
    results.add({ section, name: `${swarmName}: wait answers carrying nothing for the agent, unfiltered loop`, unit: '%', values: v['unfiltered.empty']! });
    results.add({ section, name: 'swarm: ask → answer in hand, p50, addressed loop', unit: 'ms', values: v['addressed.p50']!, goal: { on: 'value', op: '<=', target: 30, source: 'issue 12' }, reference: { name: `the floor: ${agents} bare processes, each woken by and reading every record, no MCP (bench/workers/floor-agent.ts), p50`, values: v['floor.p50']! } });
    results.add({ section, name: `paced swarm (each asker thinks ${thinkMs} ms between its questions): ask → answer in hand, p50, addressed loop`, unit: 'ms', values: v['paced.p50']!, goal: { on: 'value', op: '<=', target: 30, source: 'issue 12' } });
    results.add({ section, name: 'paced swarm: ask → answer in hand, p90', unit: 'ms', values: v['paced.p90']! });
    if (v['paced.directory.p50']) {
      results.add({ section, name: 'paced swarm, servers started with --wake directory (every record wakes every server): ask → answer in hand, p50', unit: 'ms', values: v['paced.directory.p50'] });
      results.add({ section, name: `paced swarm: CPU of the ${agents} servers per answered question, woken by bells (/proc)`, unit: 'ms', values: v['paced.cpu']!, reference: { name: 'the same with --wake directory', values: v['paced.directory.cpu']! } });
    } else results.add({ section, name: `paced swarm: CPU of the ${agents} servers per answered question, woken by bells (/proc)`, unit: 'ms', values: v['paced.cpu']! });
    results.add({ section, name: 'swarm: ask → answer in hand, p90, addressed loop', unit: 'ms', values: v['addressed.p90']!, reference: { name: 'the floor, p90', values: v['floor.p90']! } });
    results.add({ section, name: 'swarm: ask → answer in hand, mean, addressed loop', unit: 'ms', values: v['addressed.mean']!, reference: { name: `the least mean the CPU allows: ${agents} questions always open × (CPU of the servers + of the driving SDK clients, per question) / ${os.availableParallelism()} cores`, values: v['addressed.bound']! } });
    results.add({ section, name: 'the floor: ask → answer, mean', unit: 'ms', values: v['floor.mean']!, reference: { name: 'the least mean its CPU allows, reckoned the same way', values: v['floor.bound']! } });
    results.add({ section, name: `swarm: CPU of the ${agents} servers per answered question (/proc), addressed loop`, unit: 'ms', values: v['addressed.cpu']!, reference: { name: `the floor's ${agents} bare processes per question`, values: v['floor.cpu']! } });
    results.add({ section, name: 'swarm: ask → answer in hand, p50, unfiltered loop', unit: 'ms', values: v['unfiltered.p50']! });
    results.add({ section, name: 'swarm: the asker\'s tool calls per answered question (the ask + its waits while open), addressed loop', unit: 'calls', values: v['addressed.askerCalls']!, goal: { on: 'value', op: '<=', target: 3, source: 'issue 12' } });
    results.add({ section, name: 'swarm: the asker\'s tool calls per answered question, unfiltered loop', unit: 'calls', values: v['unfiltered.askerCalls']! });
    results.add({ section, name: 'swarm: every tool call of the swarm per answered question (asks, answers, all waits), addressed loop', unit: 'calls', values: v['addressed.calls']! });
    results.add({ section, name: 'swarm: every tool call of the swarm per answered question, unfiltered loop', unit: 'calls', values: v['unfiltered.calls']! });
    const [q50, q90] = percentiles(pooled, [0.5, 0.9]);
    results.note(`addressed swarm, ask → answer over all ${pooled.length} questions pooled: p50 ${q50!.toFixed(1)} ms, p90 ${q90!.toFixed(1)} ms; the asker's calls count its ask and its waits while the question was open (those waits also carry questions for it); the swarm's calls count every call of every agent`);

    const n = ctx.quick ? 20 : 100;
    for (let r = 0; r < reps; r++) {
      const store = await emptyCorpus(ctx.tmp, 6);
      put('wake.any', percentiles(await wakeSamples(store.corpus, n, false), [0.5])[0]!);
      put('wake.filtered', percentiles(await wakeSamples(store.corpus, n, true), [0.5])[0]!);
      await store.dispose();
    }
    const records = ctx.quick ? 100 : 600;
    for (let r = 0; r < reps; r++) {
      const store = await emptyCorpus(ctx.tmp, 4);
      const { bells, directory, floor } = await bystanderCpu(store.corpus, records);
      put('bystander.bells', bells);
      put('bystander.directory', directory);
      put('bystander.floor', floor);
      await store.dispose();
    }
    results.add({ section, name: `CPU per record in a server it is not for (a wait filtered to another name blocked; woken by bells; ${BYSTANDERS} servers, ${records} records, /proc)`, unit: 'ms', values: v['bystander.bells']!, reference: { name: 'a bare process that fs.watches and reads each record (floor-agent.ts)', values: v['bystander.floor']! } });
    results.add({ section, name: 'the same, servers started with --wake directory (woken by every record)', unit: 'ms', values: v['bystander.directory']!, reference: { name: 'the floor', values: v['bystander.floor']! } });
    results.add({ section, name: `stdio wake with ${agents} filtered waiters in the woken server, p50 (${n} samples a repetition)`, unit: 'ms', values: v['wake.filtered']!, reference: { name: 'one unfiltered waiter, p50', values: v['wake.any']! } });
  },
};
