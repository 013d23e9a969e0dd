/**
 * Start and footprint: a stdio server spawned the way an MCP client spawns
 * it, timed to its first tools/list answer (which must not wait for the
 * scan) and to its first answered exists (which does), then its resident
 * memory; and twenty servers on one 9,999-record corpus at once, counting
 * the inotify watches, memory and fds they hold together.
 *
 * Reference: a do-nothing MCP server bundled the same way, spawned the same
 * way (what node and the SDK cost before any store work).
 */
import { bareServerBundle } from '../lib/build.js';
import { sizeLabel, type Section } from '../lib/context.js';
import { cachedCorpus } from '../lib/corpus.js';
import { connectStdio, footprint, relayServer, textOf, type StdioPeer } from '../lib/procs.js';
import { nowMs } from '../lib/stats.js';
import { idShape } from '../../lib/model/ids.js';

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

async function bareStart(bundle: string): Promise<number> {
  const t0 = nowMs();
  const server = await connectStdio(process.execPath, [bundle]);
  await server.client.listTools();
  const ms = nowMs() - t0;
  await server.close();
  return ms;
}

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
      await startOnce(corpus, size, width); // and for this corpus's files
      const v = { bare: [] as number[], list: [] as number[], exists: [] as number[], rss: [] as number[] };
      for (let r = 0; r < reps; r++) {
        v.bare.push(await bareStart(bundle));
        const s = await startOnce(corpus, size, width);
        v.list.push(s.listMs);
        v.exists.push(s.existsMs);
        v.rss.push(s.rssMb);
      }
      const goalSize = size === 9999;
      const scaling = width === 6 ? size : undefined;
      const label = `${sizeLabel(size)} records${width === 6 ? ', width 6' : ''}`;
      results.add({ section: 'Ceilings', name: `bare bundled MCP server: spawn → tools/list (beside ${label})`, unit: 'ms', values: v.bare });
      results.add({ section: 'Start', name: `spawn → first tools/list, ${label}`, unit: 'ms', values: v.list, reference: { name: 'bare server', values: v.bare }, ...(goalSize ? { goal: { on: 'value', op: '<=', target: 300, source: 'issue 2' } } : {}) });
      results.add({ section: 'Start', name: `spawn → first exists answered (scan done), ${label}`, unit: 'ms', values: v.exists });
      results.add({ section: 'Start', name: `RSS after the scan, ${label}`, unit: 'MB', values: v.rss, ...(goalSize ? { goal: { on: 'value', op: '<=', target: 80, source: 'issue 2' } } : {}) });
      if (scaling) {
        results.add({ section: 'Scaling', name: 'start: spawn → tools/list', unit: 'ms', values: v.list, size });
        results.add({ section: 'Scaling', name: 'start: spawn → first exists (scan)', unit: 'ms', values: v.exists, size });
        results.add({ section: 'Scaling', name: 'RSS after the scan', unit: 'MB', values: v.rss, size });
      }
    }
    if (ctx.quick) ctx.results.note('quick run: the 20-server swarm is left out (it takes ~15 s); run without --quick for it');
    else await swarm(ctx);
  },
};

/** Twenty stdio servers on one 9,999-record corpus, as a swarm of twenty agents would run them. */
async function swarm(ctx: Parameters<Section['run']>[0]): Promise<void> {
  const { corpus } = await cachedCorpus(9999, 4, ctx.log);
  const v = { watches: [] as number[], rss: [] as number[], pss: [] as number[], fds: [] as number[], ready: [] as number[], cpu: [] as number[], idle: [] as number[] };
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
    // Then idle for two reconcile intervals: what twenty agents' servers cost while nobody writes.
    const idleMs = 4500;
    await new Promise((r) => setTimeout(r, idleMs));
    const later = await Promise.all(servers.map((s) => footprint(s.pid)));
    v.idle.push(((later.reduce((a, p) => a + p.cpuS, 0) - v.cpu.at(-1)!) * 100_000) / idleMs);
    await Promise.all(servers.map((s) => s.close()));
  }
  const section = 'Start';
  results(ctx).add({ section, name: '20 stdio servers on 9,999 records: inotify watches held in all', unit: 'watches', values: v.watches, goal: { on: 'value', op: '<=', target: 20, source: 'issue 2' } });
  results(ctx).add({ section, name: '20 stdio servers: total RSS', unit: 'MB', values: v.rss });
  results(ctx).add({ section, name: '20 stdio servers: total PSS (shared pages counted once)', unit: 'MB', values: v.pss });
  results(ctx).add({ section, name: '20 stdio servers: total open fds', unit: 'fds', values: v.fds });
  results(ctx).add({ section, name: '20 stdio servers: spawn → all 20 answered exists', unit: 'ms', values: v.ready });
  results(ctx).add({ section, name: '20 stdio servers: CPU time they used until then, in all', unit: 'CPU s', values: v.cpu });
  results(ctx).add({ section, name: '20 stdio servers, idle: CPU they use in all', unit: '% of a core', values: v.idle });
}

const results = (ctx: Parameters<Section['run']>[0]) => ctx.results;
