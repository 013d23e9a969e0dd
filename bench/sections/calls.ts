/**
 * What one MCP tool call costs the stdio server in CPU (ask → answer in a
 * swarm is CPU-bound, so latency follows CPU per call). The
 * swarm's own calls (bench/lib/swarm.ts), made serially by the SDK client
 * to one `p-e-relay serve` on a fresh corpus:
 *
 *   exists                     the cheapest tool
 *   wait_for_relay, 1 item     {timeout_ms: 0, to: [me, "all"], after} answered with the one question to me
 *   append_relay               an answer record
 *   blocking wait + append     a wait {timeout_ms: 5000, to, after: cursor} blocked, then woken 2 ms later by an
 *                              append on the same server: the swarm's two calls per record, per call
 *
 * Three servers beside it, in the same repetition, each measured in short
 * interleaved batches so that load moving during the run moves all alike:
 *
 *   bare SDK server            one do-nothing tool (bench/workers/bare-mcp.ts): node, the v2 SDK, JSON-RPC and the pipes
 *   bare SDK server + store    the same SDK server with three loose tools calling p-e-relay's store directly
 *                              (bench/workers/bare-store-mcp.ts): serve less this is our MCP layer (lib/mcp/)
 *   serve, semi-space flag only  the server without the launcher's --optimize-for-size (what that flag costs per call)
 *
 * The floors are spawned with the launcher's node flags. CPU is the server
 * process's own, every thread, from /proc (procs.ts threadCpuMs); the
 * client's is not counted.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { bareServerBundle, workerBundle } from '../lib/build.js';
import type { Section } from '../lib/context.js';
import { BIN } from '../lib/paths.js';
import { connectStdio, launcherFlags, relayServer, threadCpuMs, type StdioPeer } from '../lib/procs.js';

const run = promisify(execFile);

const question = (i: number) => `@p-e/x0\nkind: question\nfrom: agent-02\nto: agent-01\n\nquestion ${i} from agent-02\n`;
const answerTo = (id: string) => `@p-e/x0\nkind: answer\nfrom: agent-01\nto: agent-02\nparent: ${id}\n\nanswer to ${id}\n`;
const WAIT_TO = ['agent-01', 'all'];

/** A server under test and the corpus it appends to; `last` is the newest id it stored. */
interface Subject {
  name: string;
  peer: StdioPeer;
  last: string;
}

/** The id an append answered with: structured where the server has an output schema, else the text's second word ("stored relay-0042"). */
function storedId(result: Awaited<ReturnType<StdioPeer['call']>>): string {
  const structured = result.structuredContent as { id?: string } | undefined;
  if (structured?.id) return structured.id;
  const first = result.content[0];
  return first?.type === 'text' ? first.text.split(' ')[1]! : '';
}

const below = (id: string) => id.replace(/\d+$/, (d) => String(Number(d) - 1).padStart(d.length, '0'));

async function append(s: Subject, bytes: string): Promise<void> {
  s.last = storedId(await s.peer.call('append_relay', { bytes }));
}

interface Op {
  name: string;
  /** Tool calls per `run`. */
  calls: number;
  /** Before each batch: puts the store in the state the op expects. */
  prepare?(s: Subject): Promise<void>;
  run(s: Subject, i: number): Promise<void>;
}

function ops(): Op[] {
  const waitAfter = new Map<string, string>();
  return [
    { name: 'exists', calls: 1, run: async (s) => void (await s.peer.call('exists', { id: 'relay-0001' })) },
    {
      name: 'wait_for_relay, 1 item',
      calls: 1,
      async prepare(s) {
        await append(s, question(0));
        waitAfter.set(s.name, below(s.last));
      },
      run: async (s) => void (await s.peer.call('wait_for_relay', { timeout_ms: 0, to: WAIT_TO, after: waitAfter.get(s.name) })),
    },
    { name: 'append_relay', calls: 1, run: (s) => append(s, answerTo(s.last)) },
    {
      name: 'blocking wait + append',
      calls: 2,
      async run(s, i) {
        const waiting = s.peer.call('wait_for_relay', { timeout_ms: 5000, to: WAIT_TO, after: s.last });
        // In a swarm the append comes from another agent, long after the wait blocked: let the server go idle first,
        // or both requests arrive in one read and the append's own wake is never paid.
        await new Promise((resolve) => setTimeout(resolve, 2));
        await append(s, question(i));
        await waiting;
      },
    },
  ];
}

export const callsSection: Section = {
  name: 'calls',
  title: 'CPU per tool call over stdio: serve against the bare SDK server',
  async run(ctx) {
    const { results, reps } = ctx;
    const flags = await launcherFlags();
    const [bareBundle, storeBundle] = await Promise.all([bareServerBundle(), workerBundle('bare-store-mcp')]);
    const corpus = async (name: string) => {
      const dir = path.join(ctx.tmp, `calls-${name}`);
      await run(BIN, ['init', '--corpus', dir], { cwd: ctx.tmp });
      return dir;
    };
    const subjects: Subject[] = [
      { name: 'serve', peer: await relayServer(await corpus('serve')), last: '' },
      { name: 'serve, semi-space flag only', peer: await connectStdio(process.execPath, [...flags.filter((f) => f !== '--optimize-for-size'), BIN, 'serve', '--corpus', await corpus('semi')], { P_E_RELAY_LOG: 'warn' }), last: '' },
      { name: 'bare SDK server + store', peer: await connectStdio(process.execPath, [...flags, storeBundle, await corpus('store')]), last: '' },
    ];
    const bare = await connectStdio(process.execPath, [...flags, bareBundle]);
    const noop = () => bare.call('noop', { id: 'relay-0001' });

    const table = ops();
    const batch = ctx.window(100, 40);
    const rounds = ctx.window(6, 2);
    const warm = ctx.window(200, 40);
    // Warm every path first (JIT): a server answering its first calls costs several times what it costs later.
    for (const s of subjects) {
      await append(s, question(0));
      for (const op of table) {
        await op.prepare?.(s);
        for (let i = 0; i < warm; i++) await op.run(s, i);
      }
    }
    for (let i = 0; i < warm * 1.5; i++) await noop();

    const values = new Map<string, number[]>();
    const push = (key: string, v: number) => values.set(key, [...(values.get(key) ?? []), v]);
    for (let r = 0; r < reps; r++) {
      const cpu = new Map<string, number>();
      const add = (key: string, ms: number) => cpu.set(key, (cpu.get(key) ?? 0) + ms);
      for (let round = 0; round < rounds; round++) {
        const t0 = await threadCpuMs(bare.pid);
        for (let i = 0; i < batch; i++) await noop();
        add('bare', (await threadCpuMs(bare.pid)) - t0);
        for (const op of table) {
          for (const s of round % 2 ? [...subjects].reverse() : subjects) {
            await op.prepare?.(s);
            const n = op.calls === 2 ? batch / 2 : batch;
            const before = await threadCpuMs(s.peer.pid);
            for (let i = 0; i < n; i++) await op.run(s, i);
            add(`${op.name}|${s.name}`, (await threadCpuMs(s.peer.pid)) - before);
          }
        }
      }
      push('bare', cpu.get('bare')! / (batch * rounds));
      for (const [key, ms] of cpu) if (key !== 'bare') push(key, ms / (batch * rounds));
    }
    for (const s of subjects) await s.peer.close();
    await bare.close();

    const section = 'Calls (stdio)';
    const floor = values.get('bare')!;
    results.add({ section: 'Ceilings', name: 'bare SDK server: CPU per no-op tool call over stdio', unit: 'ms', values: floor });
    for (const op of table) {
      const ours = values.get(`${op.name}|serve`)!;
      results.add({ section, name: `serve: CPU per call, ${op.name}`, unit: 'ms', values: ours, reference: { name: 'bare SDK server', values: floor } });
      results.add({ section, name: `… against the bare SDK server + store, ${op.name}`, unit: 'ms', values: ours, reference: { name: 'bare SDK server + store', values: values.get(`${op.name}|bare SDK server + store`)! } });
      results.add({ section, name: `… without --optimize-for-size, ${op.name}`, unit: 'ms', values: values.get(`${op.name}|serve, semi-space flag only`)!, reference: { name: 'serve as launched', values: ours } });
    }
    results.note(`calls: CPU of the server process (every thread, /proc schedstat) over ${rounds} interleaved batches of ${batch} calls per repetition, after ${warm} warm-up calls of each; floors spawned with the launcher's flags (${flags.join(' ')})`);
  },
};
