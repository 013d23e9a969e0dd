/**
 * Start and footprint: a stdio server spawned the way an MCP client spawns
 * it (the launcher, bin/p-e-relay), timed to its first tools/list answer
 * (which must not wait for the index) and to its first answered exists
 * (which does), then its resident memory: with the index snapshot a store
 * that has run leaves, and on the first start after `rm -rf .state` (every
 * record read). Then twenty servers on one 9,999-record corpus at once,
 * counting what they hold together, beside twenty bare servers, and twenty
 * servers making no calls while another process appends to their corpus.
 *
 * Reference: a do-nothing MCP server bundled the same way and spawned with
 * the launcher's node flags (what node and the SDK cost before any store work).
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { bareServerBundle } from '../lib/build.js';
import { sizeLabel, type BenchContext, type Section } from '../lib/context.js';
import fs from 'node:fs/promises';
import { coldSwarmOnce, NODE_FLAGS, type SwarmStart } from '../lib/cold-swarm.js';
import { cachedCorpus, copyCorpus, dropSnapshot, ensureSnapshot } from '../lib/corpus.js';
import { WORKERS } from '../lib/paths.js';
import { connectStdio, cpuSecondsOf, footprint, relayServer, textOf, type StdioPeer } from '../lib/procs.js';
import { nowMs, sleep } from '../lib/stats.js';
import { silentLogger } from '../../lib/log.js';
import { RelayStore } from '../../lib/store/store.js';
import { idShape } from '../../lib/model/ids.js';

const run = promisify(execFile);

interface Start {
  listMs: number;
  existsMs: number;
  rssMb: number;
}

async function startOnce(corpus: string, size: number, width: number): Promise<Start> {
  const t0 = nowMs();
  const server = await relayServer(corpus);
  await server.client.listTools();
  const listMs = nowMs() - t0;
  const last = idShape(width).format(size);
  const state = textOf(await server.call('exists', { id: last }));
  const existsMs = nowMs() - t0;
  if (!state.includes('PRESENT')) throw new Error(`exists ${last} answered "${state}" on a corpus that holds it`);
  const { rssMb } = await footprint(server.pid);
  await server.close();
  return { listMs, existsMs, rssMb };
}

const bareServer = (bundle: string) => connectStdio(process.execPath, [...NODE_FLAGS, bundle]);

async function bareStart(bundle: string): Promise<{ ms: number; rssMb: number }> {
  const t0 = nowMs();
  const server = await bareServer(bundle);
  await server.client.listTools();
  const ms = nowMs() - t0;
  const { rssMb } = await footprint(server.pid);
  await server.close();
  return { ms, rssMb };
}

/** Bytes of heap and typed arrays one store's index holds per record (bench/workers/index-bytes.ts). */
async function indexBytes(corpus: string): Promise<number> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--expose-gc', path.join(WORKERS, 'index-bytes.ts'), corpus], { maxBuffer: 1 << 20 });
  return (JSON.parse(stdout) as { bytesPerRecord: number }).bytesPerRecord;
}

/** Start-up and memory goals, by corpus size. */
const GOALS: Record<number, { existsMs: number; rssMb: number }> = { 100_000: { existsMs: 400, rssMb: 100 }, 1_000_000: { existsMs: 2000, rssMb: 300 } };

export const startSection: Section = {
  name: 'start',
  title: 'Start and footprint: spawn → first tools/list, first exists, RSS',
  async run(ctx) {
    const { results, reps } = ctx;
    const bundle = await bareServerBundle();
    await bareStart(bundle); // warm the page cache for node and the SDK
    const sizes = [{ size: 100, width: 4 }, { size: 9999, width: 4 }, ...ctx.sizes];
    for (const { size, width } of sizes) {
      const { corpus } = await cachedCorpus(size, width, ctx.log);
      if (await ensureSnapshot(corpus)) ctx.log(`wrote the index snapshot of the ${sizeLabel(size)} corpus (a full scan, once)`);
      await startOnce(corpus, size, width); // and for this corpus's files
      const v = { bare: [] as number[], bareRss: [] as number[], list: [] as number[], exists: [] as number[], rss: [] as number[], cold: [] as number[], coldRss: [] as number[] };
      // A first start after rm -rf .state reads every record: minutes at 1M,
      // so not there (docs/performance-tables.md gives the in-process figure).
      const coldReps = size >= 1_000_000 ? 0 : reps;
      for (let r = 0; r < reps; r++) {
        const bare = await bareStart(bundle);
        v.bare.push(bare.ms);
        v.bareRss.push(bare.rssMb);
        const s = await startOnce(corpus, size, width);
        v.list.push(s.listMs);
        v.exists.push(s.existsMs);
        v.rss.push(s.rssMb);
        if (r < coldReps) {
          await dropSnapshot(corpus);
          const c = await startOnce(corpus, size, width);
          v.cold.push(c.existsMs);
          v.coldRss.push(c.rssMb);
          await ensureSnapshot(corpus); // the cold server wrote it; make sure
        }
      }
      const goalSize = size === 9999;
      const goal = GOALS[size];
      const scaling = width >= 6 ? size : undefined;
      const label = `${sizeLabel(size)} records${width !== 4 ? `, width ${width}` : ''}`;
      results.add({ section: 'Ceilings', name: `bare bundled MCP server: spawn → tools/list (beside ${label})`, unit: 'ms', values: v.bare });
      results.add({ section: 'Ceilings', name: `bare bundled MCP server: RSS (beside ${label})`, unit: 'MB', values: v.bareRss });
      results.add({ section: 'Start', name: `spawn → first tools/list, ${label}`, unit: 'ms', values: v.list, reference: { name: 'bare server', values: v.bare }, ...(goalSize ? { goal: { on: 'value', op: '<=', target: 300, source: 'issue 2' } } : {}) });
      results.add({ section: 'Start', name: `spawn → first exists answered (index snapshot there), ${label}`, unit: 'ms', values: v.exists, reference: { name: 'bare server', values: v.bare }, ...(goal ? { goal: { on: 'value', op: '<=', target: goal.existsMs, source: 'issue 14' } } : {}) });
      results.add({ section: 'Start', name: `RSS after the first exists, ${label}`, unit: 'MB', values: v.rss, reference: { name: 'bare server', values: v.bareRss }, ...(goalSize ? { goal: { on: 'value', op: '<=', target: 80, source: 'issue 2' } } : goal ? { goal: { on: 'value', op: '<=', target: goal.rssMb, source: 'issue 14' } } : {}) });
      if (v.cold.length) {
        results.add({ section: 'Start', name: `first start after rm -rf .state (reads every record): spawn → first exists, ${label}`, unit: 'ms', values: v.cold });
        results.add({ section: 'Start', name: `first start after rm -rf .state: RSS, ${label}`, unit: 'MB', values: v.coldRss });
      }
      if (scaling) {
        results.add({ section: 'Scaling', name: 'start: spawn → tools/list', unit: 'ms', values: v.list, size });
        results.add({ section: 'Scaling', name: 'start: spawn → first exists', unit: 'ms', values: v.exists, size });
        results.add({ section: 'Scaling', name: 'RSS after the first exists', unit: 'MB', values: v.rss, size });
        const bytes = await indexBytes(corpus);
        results.add({ section: 'Start', name: `index memory per record (heap + typed arrays, after GC), ${label}`, unit: 'bytes', values: [bytes] });
      }
    }
    if (ctx.quick) ctx.results.note('quick run: the 20-server swarm is left out (it takes ~15 s); run without --quick for it');
    else await swarm(ctx, bundle);
  },
};

/** How long after start a server's CPU is start-up's still: V8's memory reducer runs some seconds after the start's burst. */
const SETTLE_MS = 12_000;

/** Twenty stdio servers on one 9,999-record corpus, as a swarm of twenty agents would run them; then twenty bare servers. */
async function swarm(ctx: BenchContext, bundle: string): Promise<void> {
  const { corpus } = await cachedCorpus(9999, 4, ctx.log);
  await ensureSnapshot(corpus);
  const v = { watches: [] as number[], rss: [] as number[], pss: [] as number[], barePss: [] as number[], bareReady: [] as number[], bareCpu: [] as number[], nodeCpu: [] as number[], above: [] as number[], fds: [] as number[], ready: [] as number[], cpu: [] as number[], idle: [] as number[] };
  for (let r = 0; r < Math.min(ctx.reps, 2); r++) {
    const t0 = nowMs();
    const servers: StdioPeer[] = await Promise.all(Array.from({ length: 20 }, () => relayServer(corpus)));
    await Promise.all(servers.map((s) => s.call('exists', { id: 'relay-9999' })));
    v.ready.push(nowMs() - t0);
    const prints = await Promise.all(servers.map((s) => footprint(s.pid)));
    v.watches.push(prints.reduce((a, p) => a + p.inotifyWatches, 0));
    v.rss.push(prints.reduce((a, p) => a + p.rssMb, 0));
    v.pss.push(prints.reduce((a, p) => a + p.pssMb, 0));
    v.fds.push(prints.reduce((a, p) => a + p.fds, 0));
    v.cpu.push(prints.reduce((a, p) => a + p.cpuS, 0));
    // Then idle: what twenty agents' servers cost while nobody writes. Not
    // counted: the first seconds, when V8's memory reducer collects the start's
    // garbage in every process (about 50 ms of CPU each, once).
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const settled = await cpuSecondsOf(servers.map((s) => s.pid));
    const idleMs = 4500;
    await new Promise((r) => setTimeout(r, idleMs));
    v.idle.push((((await cpuSecondsOf(servers.map((s) => s.pid))) - settled) * 100_000) / idleMs);
    await Promise.all(servers.map((s) => s.close()));
    // The floor: twenty bare SDK servers, each having answered one call.
    const b0 = nowMs();
    const bare: StdioPeer[] = await Promise.all(Array.from({ length: 20 }, () => bareServer(bundle)));
    await Promise.all(bare.map((s) => s.call('noop', {})));
    v.bareReady.push(nowMs() - b0);
    const barePrints = await Promise.all(bare.map((s) => footprint(s.pid)));
    v.barePss.push(barePrints.reduce((a, p) => a + p.pssMb, 0));
    v.bareCpu.push(barePrints.reduce((a, p) => a + p.cpuS, 0));
    v.above.push((v.pss.at(-1)! - v.barePss.at(-1)!) / 20);
    await Promise.all(bare.map((s) => s.close()));
    v.nodeCpu.push(await twentyNodes());
  }
  const section = 'Start';
  const results = ctx.results;
  results.add({ section, name: '20 stdio servers on 9,999 records: inotify watches held in all', unit: 'watches', values: v.watches, goal: { on: 'value', op: '<=', target: 20, source: 'issue 2' } });
  results.add({ section, name: '20 stdio servers: total RSS', unit: 'MB', values: v.rss });
  results.add({ section: 'Ceilings', name: '20 bare bundled MCP servers: total PSS', unit: 'MB', values: v.barePss });
  results.add({ section, name: '20 stdio servers (the launcher): total PSS (shared pages counted once)', unit: 'MB', values: v.pss, reference: { name: '20 bare servers', values: v.barePss }, goal: { on: 'value', op: '<=', target: 500, source: 'issue 14' } });
  results.add({ section, name: '20 stdio servers: PSS per server above the bare server\'s', unit: 'MB', values: v.above });
  results.add({ section, name: '20 stdio servers: total open fds', unit: 'fds', values: v.fds });
  results.add({ section: 'Ceilings', name: '20 bare bundled MCP servers: spawn → all 20 answered a call', unit: 'ms', values: v.bareReady });
  results.add({ section: 'Ceilings', name: '20 bare bundled MCP servers: CPU time they used until then, in all', unit: 'CPU s', values: v.bareCpu });
  results.add({ section: 'Ceilings', name: '20 node processes that load nothing (node -e with a stdin read): CPU time to start, in all', unit: 'CPU s', values: v.nodeCpu });
  results.add({ section, name: '20 stdio servers: spawn → all 20 answered exists', unit: 'ms', values: v.ready, reference: { name: '20 bare servers', values: v.bareReady }, goal: { on: 'value', op: '<=', target: 1500, source: 'issue 14' } });
  results.add({ section, name: '20 stdio servers: CPU time they used until then, in all', unit: 'CPU s', values: v.cpu, reference: { name: '20 bare servers', values: v.bareCpu }, goal: { on: 'value', op: '<=', target: 3, source: 'issue 14' } });
  results.add({ section, name: `20 stdio servers, idle (from ${SETTLE_MS / 1000} s after they answered): CPU they use in all`, unit: '% of a core', values: v.idle });
  await coldSwarm(ctx, bundle);
  await idleBesideAWriter(ctx);
}

/**
 * Twenty servers whose agents make no calls while another process appends
 * to their corpus: what a swarm's idle agents cost while the rest of it
 * works. Their directory changes with every record, so no listing is skipped
 * for an unchanged directory, and a listing reads the whole corpus
 * (lib/store/hear/watch.ts QUIET_LISTING_MAX_MS). On a copy of the
 * 10,000-record corpus, since the records appended stay; the first
 * SETTLE_MS after the servers answered are not counted.
 */
async function idleBesideAWriter(ctx: BenchContext): Promise<void> {
  const percent: number[] = [];
  const perRecord: number[] = [];
  const windowMs = ctx.window(24_000, 8_000);
  for (let r = 0; r < Math.min(ctx.reps, 2); r++) {
    const copy = await copyCorpus(await cachedCorpus(10_000, 6, ctx.log), ctx.tmp);
    const servers = await Promise.all(Array.from({ length: 20 }, () => relayServer(copy.corpus)));
    const writer = await RelayStore.prepare({ corpus: copy.corpus, log: silentLogger });
    try {
      await Promise.all(servers.map((s) => s.call('exists', { id: 'relay-010000' })));
      await writer.open();
      const settleUntil = nowMs() + SETTLE_MS;
      let n = 0;
      const writeFor = async (ms: number) => {
        const until = nowMs() + ms;
        while (nowMs() < until) {
          await writer.append(Buffer.from(`@p-e/x0\nkind: note\nfrom: worker\nto: lead\n\nprogress ${n++}\n`), { depositedBy: 'mcp' });
          await sleep(20);
        }
      };
      await writeFor(settleUntil - nowMs());
      const pids = servers.map((s) => s.pid);
      const [cpu0, n0, t0] = [await cpuSecondsOf(pids), n, nowMs()];
      await writeFor(windowMs);
      const [cpu, records, ms] = [(await cpuSecondsOf(pids)) - cpu0, n - n0, nowMs() - t0];
      percent.push((cpu * 100_000) / ms);
      perRecord.push((cpu * 1000) / 20 / records);
    } finally {
      await writer.close();
      await Promise.all(servers.map((s) => s.close()));
      await copy.dispose();
    }
  }
  const name = `20 stdio servers making no calls while another process appends ~45 records a second (10,000 records, ${windowMs / 1000} s)`;
  ctx.results.add({ section: 'Start', name: `${name}: CPU they use in all`, unit: '% of a core', values: percent });
  ctx.results.add({ section: 'Start', name: '… the same, per server per record appended', unit: 'ms', values: perRecord });
}

/**
 * The same twenty on a copy of the corpus with no .state/ (a fresh clone, an
 * rsync mirror, rm -rf .state), against the warm start that follows: one of
 * them builds the index snapshot and the rest wait for it (snapshot-build.ts).
 */
async function coldSwarm(ctx: BenchContext, bundle: string): Promise<void> {
  const copy = await copyCorpus(await cachedCorpus(9999, 4, ctx.log), ctx.tmp);
  const runs: SwarmStart[] = [];
  try {
    for (let r = 0; r < Math.min(ctx.reps, 2); r++) {
      await fs.rm(path.join(copy.corpus, '.state'), { recursive: true, force: true });
      runs.push(await coldSwarmOnce(copy.corpus, bundle));
    }
  } finally {
    await copy.dispose();
  }
  const section = 'Start';
  const warm = runs.map((s) => s.warmCpuS);
  ctx.results.add({ section, name: '20 stdio servers on 9,999 records with no .state/: CPU until all answered exists, in all', unit: 'CPU s', values: runs.map((s) => s.coldCpuS), reference: { name: 'the warm start after it', values: warm }, goal: { on: 'ratio', op: '<=', target: 1.5, source: 'issue 23' } });
  ctx.results.add({ section, name: '20 stdio servers with no .state/: spawn → all 20 answered exists', unit: 'ms', values: runs.map((s) => s.coldMs), reference: { name: 'the warm start after it', values: runs.map((s) => s.warmMs) } });
}

/**
 * Node's own floor: twenty node processes started at once that load no code,
 * each answering one line on stdin so it is measured at the same point a
 * server is (after its first answer). CPU-seconds in all.
 */
async function twentyNodes(): Promise<number> {
  const script = "process.stdin.once('data', () => { process.stdout.write('ok\\n'); process.stdin.once('data', () => {}); })";
  const procs = Array.from({ length: 20 }, () => spawn(process.execPath, [...NODE_FLAGS, '-e', script], { stdio: ['pipe', 'pipe', 'ignore'] }));
  await Promise.all(procs.map((p) => new Promise<void>((resolve) => { p.stdout!.once('data', () => resolve()); p.stdin!.write('go\n'); })));
  const prints = await Promise.all(procs.map((p) => footprint(p.pid!)));
  for (const p of procs) p.stdin!.end();
  await Promise.all(procs.map((p) => new Promise((resolve) => p.once('exit', resolve))));
  return prints.reduce((a, p) => a + p.cpuS, 0);
}
