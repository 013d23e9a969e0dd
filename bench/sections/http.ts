/**
 * The HTTP hub (`serve --http`): MCP reads over stateless Streamable HTTP at
 * 1 and 32 concurrent clients, against a raw node:http JSON handler (the
 * ceiling) and against the naive pattern the goal is set against (a fresh
 * McpServer built for every request), all driven by the same client loop in
 * the same repetition; and append → SSE event latency at 1 and 100
 * subscribers.
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import { idShape } from '../../lib/model/ids.js';
import type { BenchContext, Section } from '../lib/context.js';
import { cachedCorpus, copyCorpus, mulberry32 } from '../lib/corpus.js';
import { httpRate, modernHeaders, modernToolCall, openEvents, request, startHub, toolCall, type HubProcess } from '../lib/http-load.js';
import { ROOT } from '../lib/paths.js';
import { forkWorker } from '../lib/procs.js';
import { nowMs, percentiles, sleep } from '../lib/stats.js';

const SIZE = 10_000;
const shape = idShape(6);

export const httpSection: Section = {
  name: 'http',
  title: 'HTTP hub: MCP reads at 1 and 32 clients, append → SSE event',
  async run(ctx) {
    const hubLanded = await fs.access(path.join(ROOT, 'lib', 'http', 'serve-http.ts')).then(() => true, () => false);
    const corpus = await copyCorpus(await cachedCorpus(SIZE, 6, ctx.log), ctx.tmp);
    const keys = path.join(path.dirname(corpus.corpus), 'keys');
    const raw = forkWorker('raw-http');
    const naive = forkWorker('naive-http', [corpus.corpus]);
    const [rawPort, naivePort] = await Promise.all([raw.next<{ port: number }>('ready'), naive.next<{ port: number }>('ready')]).then((m) => m.map((x) => x.port) as [number, number]);
    const hub = hubLanded ? await startHub(corpus.corpus, keys, ['--append-rate', '1000000']) : null;
    try {
      await reads(ctx, rawPort, naivePort, hub?.port ?? null);
      if (hub) await sse(ctx, hub, keys);
      else ctx.results.note('HTTP hub not built yet (no lib/http/serve-http.ts): hub figures and SSE skipped; raw and naive measured.');
    } finally {
      await Promise.all([raw.stop(), naive.stop(), hub?.stop()]);
      await corpus.dispose();
    }
  },
};

async function reads(ctx: BenchContext, rawPort: number, naivePort: number, hubPort: number | null): Promise<void> {
  const { results, reps } = ctx;
  const ms = ctx.window(700, 200);
  const random = mulberry32(7);
  const anyId = () => shape.format(1 + Math.floor(random() * SIZE));
  const allTools: [string, (n: number) => string, Record<string, string>?][] = [
    ['get_relay', (n) => toolCall(n, 'get_relay', { id: anyId() })],
    ['get_relay (2026-07-28)', (n) => modernToolCall(n, 'get_relay', { id: anyId() }), modernHeaders('get_relay')],
    ['exists', (n) => toolCall(n, 'exists', { id: anyId() })],
    ['list_replies', (n) => toolCall(n, 'list_replies', { id: anyId() })],
    ['list_relays after the newest 10', (n) => toolCall(n, 'list_relays', { after: shape.format(SIZE - 10) })],
  ];
  const tools = ctx.quick ? allTools.slice(0, 3) : allTools;
  // Warm every server (JIT, page cache, the hub's pool) before the first window.
  for (const port of [rawPort, naivePort, hubPort]) if (port) await httpRate(port, '/mcp', 4, 300, tools[0]![1]);
  for (const clients of [1, 32]) {
    const v = new Map<string, number[]>();
    const put = (key: string, x: number) => v.set(key, [...(v.get(key) ?? []), x]);
    for (let r = 0; r < reps; r++) {
      put('raw', await httpRate(rawPort, '/mcp', clients, ms, tools[0]![1]));
      put('naive', await httpRate(naivePort, '/mcp', clients, ms, tools[0]![1]));
      if (hubPort) for (const [name, body, headers] of tools) put(name, await httpRate(hubPort, '/mcp', clients, ms, body, headers));
    }
    const section = 'HTTP MCP reads';
    const c = `${clients} client${clients > 1 ? 's' : ''}`;
    results.add({ section: 'Ceilings', name: `raw node:http JSON handler, ${c}`, unit: 'req/s', values: v.get('raw')! });
    results.add({ section, name: `naive: a new McpServer per request, get_relay, ${c}`, unit: 'req/s', values: v.get('naive')!, reference: { name: 'raw handler', values: v.get('raw')! } });
    if (!hubPort) continue;
    results.add({ section, name: `hub get_relay, ${c}, vs naive`, unit: 'req/s', values: v.get('get_relay')!, reference: { name: 'naive', values: v.get('naive')! }, goal: { on: 'ratio', op: '>=', target: 2, source: 'issue 3' } });
    for (const [name] of tools) results.add({ section, name: `hub ${name}, ${c}`, unit: 'req/s', values: v.get(name)!, reference: { name: 'raw handler', values: v.get('raw')! } });
  }
}

async function sse(ctx: BenchContext, hub: HubProcess, keys: string): Promise<void> {
  const { results, reps } = ctx;
  const samples = ctx.quick ? 10 : 60;
  await addKey(keys, 'bench-writer').catch(() => {});
  const writerKey = (await readKey(keys, 'bench-writer'))!;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let last = shape.format(SIZE);
  const append = async (i: number) => {
    const body = Buffer.from(`@p-e/x0\nkind: ping\nfrom: bench-writer\n\nsse ${i} ${Math.random()}\n`);
    const reply = await request(agent, hub.port, 'POST', '/relays', body.toString(), { 'content-type': 'text/plain', authorization: authorizationFor('bench-writer', writerKey, 'POST', body) });
    if (reply.status !== 201) throw new Error(`POST /relays answered ${reply.status}: ${reply.body}`);
    const id = /relay-\d+/.exec(reply.body)?.[0];
    if (!id) throw new Error(`POST /relays answered no id: ${reply.body}`);
    return id;
  };
  for (const subscribers of [1, 100]) {
    const v = { p50: [] as number[], p99: [] as number[], post: [] as number[] };
    for (let r = 0; r < reps; r++) {
      // A stream's signature is single-use and has no body to vary, so every stream of every repetition is its own agent.
      const agents = Array.from({ length: subscribers }, (_, i) => `bench-sub-${subscribers}-${r}-${i}`);
      for (const a of agents) await addKey(keys, a).catch(() => {});
      const streams = await Promise.all(agents.map(async (a) => openEvents(hub.port, a, (await readKey(keys, a))!, last)));
      const latencies: number[] = [];
      const posts: number[] = [];
      for (let i = 0; i < samples; i++) {
        const t0 = nowMs();
        const id = await append(i);
        posts.push(nowMs() - t0);
        const arrivals = await Promise.all(streams.map((s) => s.arrival(id)));
        latencies.push(...arrivals.map((t) => t - t0));
        last = id;
        await sleep(5);
      }
      for (const s of streams) s.close();
      const [p50, p99] = percentiles(latencies, [0.5, 0.99]);
      v.p50.push(p50!);
      v.p99.push(p99!);
      v.post.push(percentiles(posts, [0.5])[0]!);
    }
    const section = 'HTTP SSE';
    results.add({ section, name: `append (signed POST /relays) → SSE event, ${subscribers} subscriber${subscribers > 1 ? 's' : ''}, p50`, unit: 'ms', values: v.p50 });
    results.add({ section, name: `append → SSE event, ${subscribers} subscriber${subscribers > 1 ? 's' : ''}, p99`, unit: 'ms', values: v.p99 });
    results.add({ section, name: `signed POST /relays round trip while ${subscribers} subscribed, p50`, unit: 'ms', values: v.post });
  }
  agent.destroy();
}
