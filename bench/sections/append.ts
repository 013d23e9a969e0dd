/**
 * Durable appends per second: at the store itself (1, 4 and 8 processes on
 * one corpus), through MCP stdio (the SDK client → `p-e-relay serve`), and
 * through the CLI (one process per append). Each repetition measures the raw
 * file-creation ceiling right before the figure it is the ceiling for.
 *
 * A serial MCP append waits for the client's half of a call, the server's
 * SDK and two pipe wake-ups besides the store's own append, none of which
 * the store's loop waits for. So the stdio append is also measured against
 * the bare SDK server with the same store behind one loose tool
 * (bench/workers/bare-store-mcp.ts): the most any server on this SDK could
 * do, and what our MCP layer adds on top of it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { checkCorpus, describeCheck, lostOf } from '../lib/check.js';
import type { BenchContext, Section } from '../lib/context.js';
import { cachedCorpus, copyCorpus, emptyCorpus, type Corpus } from '../lib/corpus.js';
import { BIN } from '../lib/paths.js';
import { workerBundle } from '../lib/build.js';
import { connectStdio, cpuMsOf, forkWorker, launcherFlags, relayServer, type StdioPeer, type Worker } from '../lib/procs.js';
import { allReady, runGroup, runProcess } from '../lib/spawn.js';
import { concurrentRate, rate } from '../lib/stats.js';

const note = (lane: number, seq: number) => `@p-e/x0\nkind: note\nfrom: bench-${lane}\n\nappend ${seq} from lane ${lane}: the swarm reports progress and asks for review.\n`;

async function rawWorkers(ctx: BenchContext, n: number): Promise<Worker[]> {
  const dir = await fs.mkdtemp(path.join(ctx.tmp, `raw${n}-`));
  return Array.from({ length: n }, (_, i) => forkWorker('raw-create', [dir, `w${i}`]));
}

export const appendSection: Section = {
  name: 'append',
  title: 'Append: durable appends per second',
  async run(ctx) {
    const ms = ctx.window(1500, 300);
    const { results, reps } = ctx;
    // Eight writer processes serve all three groups: writer i appends in every group of more than i writers.
    // --quick leaves out the 8-writer group: eight more processes to start cost more than its windows.
    const sizes = ctx.quick ? [1, 4] : [1, 4, 8];
    const groups = await Promise.all(sizes.map(async (n) => ({ n, corpus: await emptyCorpus(ctx.tmp, 6) })));
    const writers = Array.from({ length: Math.max(...sizes) }, (_, i) => forkWorker('store-append', [`p${i}`, ...groups.filter((g) => g.n > i).map((g) => g.corpus.corpus)]));
    const stores = groups.map((g) => ({ ...g, workers: writers.slice(0, g.n) }));
    const rawAll = await rawWorkers(ctx, Math.max(...sizes));
    const raw = { 1: rawAll.slice(0, 1), 4: rawAll.slice(0, 4), 8: rawAll };
    const mcpCorpora = [await emptyCorpus(ctx.tmp, 6), await emptyCorpus(ctx.tmp, 6), await emptyCorpus(ctx.tmp, 6)];
    const mcp1 = [await relayServer(mcpCorpora[0]!.corpus)];
    const bareStore = await connectStdio(process.execPath, [...(await launcherFlags()), await workerBundle('bare-store-mcp'), mcpCorpora[2]!.corpus]);
    const mcp4: StdioPeer[] = await Promise.all(Array.from({ length: 4 }, () => relayServer(mcpCorpora[1]!.corpus)));
    const cliCorpus = await emptyCorpus(ctx.tmp, 6);
    await allReady([...rawAll, ...writers]);

    const v: Record<string, number[]> = {};
    const put = (key: string, x: number) => (v[key] ??= []).push(x);
    const acked: Record<string, number> = { mcp1: 0, mcp4: 0, bareStore: 0 };
    const bareAppend = async () => {
      await bareStore.call('append_relay', { bytes: note(0, seq++) });
      acked.bareStore!++;
    };
    let seq = 0;
    const warm = ctx.window(300, 150);
    // One unrecorded round first: the first window after twenty processes start runs at a fraction of the rest.
    for (const s of stores) {
      await runGroup(raw[s.n as 1 | 4 | 8], warm);
      acked[`store${s.n}`] = (await runGroup(s.workers, warm, { corpus: s.corpus.corpus })).count;
    }
    await rate(warm, async () => {
      await mcp1[0]!.call('append_relay', { bytes: note(0, seq++) });
      acked.mcp1!++;
    });
    await concurrentRate(warm, 4, async (lane) => {
      await mcp4[lane]!.call('append_relay', { bytes: note(lane, seq++) });
      acked.mcp4!++;
    });
    await rate(warm, bareAppend);
    for (let r = 0; r < reps; r++) {
      ctx.log(`repetition ${r + 1}/${reps}`);
      for (const s of stores) {
        // The ceiling brackets the figure (half before, half after), so load
        // that rises or falls across the pair moves both sides alike.
        const rawGroup = raw[s.n as 1 | 4 | 8];
        const before = await runGroup(rawGroup, ms / 2);
        const run = await runGroup(s.workers, ms, { corpus: s.corpus.corpus });
        const after = await runGroup(rawGroup, ms / 2);
        put(`raw${s.n}`, (before.rate + after.rate) / 2);
        acked[`store${s.n}`] = (acked[`store${s.n}`] ?? 0) + run.count;
        put(`store${s.n}`, run.rate);
      }
      // The ceiling brackets the figure, as above.
      const bareBefore = await rate(ms / 2, bareAppend);
      put('mcp1', await rate(ms, async () => {
        await mcp1[0]!.call('append_relay', { bytes: note(0, seq++) });
        acked.mcp1!++;
      }));
      put('bareStore', (bareBefore + (await rate(ms / 2, bareAppend))) / 2);
      put('mcp4', await concurrentRate(ms, 4, async (lane) => {
        await mcp4[lane]!.call('append_relay', { bytes: note(lane, seq++) });
        acked.mcp4!++;
      }));
      const cliMs = ctx.window(2000, 300);
      put('spawn', await rate(cliMs, () => runProcess(process.execPath, ['-e', ''])));
      put('cli', await rate(cliMs, () => runProcess(process.execPath, [BIN, 'append', '--corpus', cliCorpus.corpus], note(9, seq++))));
    }

    for (const w of writers) w.send({ type: 'close' });
    await Promise.all([...rawAll, ...writers].map((w) => w.stop()));
    await Promise.all([...mcp1, ...mcp4, bareStore].map((p) => p.close()));

    const lost: Record<string, number> = {};
    for (const [key, corpus] of [...stores.map((s) => [`store${s.n}`, s.corpus] as const), ['mcp1', mcpCorpora[0]!] as const, ['mcp4', mcpCorpora[1]!] as const, ['bareStore', mcpCorpora[2]!] as const]) {
      const check = await checkCorpus(corpus.corpus, 6);
      lost[key] = lostOf(check, acked[key]!) + check.gaps + check.damaged + check.duplicates;
      ctx.log(`${key}: ${describeCheck(check, acked[key]!)}`);
    }

    const section = 'Append';
    results.add({ section: 'Ceilings', name: 'raw durable create (tmp+fsync+link+unlink+dir fsync), 1 process', unit: 'files/s', values: v.raw1! });
    results.add({ section: 'Ceilings', name: 'raw durable create, 4 processes, one directory', unit: 'files/s', values: v.raw4! });
    if (v.raw8) results.add({ section: 'Ceilings', name: 'raw durable create, 8 processes, one directory', unit: 'files/s', values: v.raw8 });
    results.add({ section: 'Ceilings', name: 'process start (node -e "")', unit: 'starts/s', values: v.spawn! });
    results.add({ section, name: 'store append, 1 process', unit: 'appends/s', values: v.store1!, reference: { name: 'raw create 1 proc', values: v.raw1! }, goal: { on: 'ratio', op: '>=', target: 0.8, source: 'issue 2' } });
    results.add({ section, name: 'store append, 4 processes', unit: 'appends/s', values: v.store4!, reference: { name: 'raw create 4 procs', values: v.raw4! }, goal: { on: 'value', op: '>=', target: 1500, source: 'issue 2' } });
    if (v.store8) results.add({ section, name: 'store append, 8 processes', unit: 'appends/s', values: v.store8, reference: { name: 'raw create 8 procs', values: v.raw8! } });
    results.add({ section: 'Ceilings', name: 'bare SDK server + store: stdio append_relay, serial', unit: 'appends/s', values: v.bareStore! });
    results.add({ section, name: 'MCP stdio append_relay, 1 server', unit: 'appends/s', values: v.mcp1!, reference: { name: 'store 1 proc', values: v.store1! }, goal: { on: 'ratio', op: '>=', target: 0.7, source: 'issue 26' } });
    results.add({ section, name: '… against the bare SDK server + store', unit: 'appends/s', values: v.mcp1!, reference: { name: 'bare SDK server + store', values: v.bareStore! } });
    results.add({ section, name: 'MCP stdio append_relay, 4 servers', unit: 'appends/s', values: v.mcp4!, reference: { name: 'store 4 procs', values: v.store4! } });
    results.add({ section, name: 'CLI append (a process per append)', unit: 'appends/s', values: v.cli!, reference: { name: 'node -e "" starts', values: v.spawn! }, note: 'process start dominates' });
    results.add({ section, name: 'records lost or damaged, all append runs', unit: 'records', values: [Object.values(lost).reduce((a, b) => a + b, 0)], goal: { on: 'value', op: '<=', target: 0, source: 'issue 2' } });
    results.note(`append runs checked on disk (ids contiguous, digests good, no duplicate bytes): ${Object.entries(lost).map(([k, x]) => `${k} ${x} lost`).join(', ')}`);
    for (const c of [...stores.map((s) => s.corpus), ...mcpCorpora, cliCorpus]) await c.dispose();
    await appendAtSizes(ctx, ms);
  },
};

/**
 * How a stdio server's serial appends move with the corpus it holds. One
 * server per size, all started first; each repetition then measures every
 * size in turn, so load that rises or falls during the run moves all sizes
 * alike (the figure is their ratio, meant to stay within 1.3×). The CPU the
 * server spent per append (/proc, user+sys) is recorded too: on a shared
 * machine it moves less than the rate.
 */
async function appendAtSizes(ctx: BenchContext, ms: number): Promise<void> {
  const runs: { size: number; copy: Corpus & { dispose(): Promise<void> }; server: StdioPeer; rates: number[]; cpu: number[]; seq: number }[] = [];
  for (const { size, width } of ctx.sizes) {
    const copy = await copyCorpus(await cachedCorpus(size, width, ctx.log), ctx.tmp);
    const server = await relayServer(copy.corpus);
    await server.call('exists', { id: 'relay-' + String(size).padStart(width, '0') }); // the scan is done
    runs.push({ size, copy, server, rates: [], cpu: [], seq: 0 });
  }
  for (let r = 0; r < ctx.reps; r++) {
    for (const run of runs) {
      const before = await cpuMsOf(run.server.pid);
      let count = 0;
      run.rates.push(await rate(ms, async () => {
        await run.server.call('append_relay', { bytes: note(1, run.seq++) });
        count++;
      }));
      run.cpu.push(((await cpuMsOf(run.server.pid)) - before) / count);
    }
  }
  for (const run of runs) {
    await run.server.close();
    await run.copy.dispose();
    ctx.results.add({ section: 'Scaling', name: 'stdio append_relay, serial', unit: 'appends/s', values: run.rates, size: run.size });
    ctx.results.add({ section: 'Scaling', name: 'stdio append_relay, server CPU per append', unit: 'ms', values: run.cpu, size: run.size });
  }
}
