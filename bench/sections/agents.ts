/**
 * Agents with a name (spec §8d), against the unnamed recipes in the same run:
 *
 *   per answered question   what an asker and an answerer spend, in tool calls and in bytes of
 *                           JSON (arguments sent + results read: what a model reads and writes),
 *                           from the question's append to the answer in the asker's hands. Unnamed:
 *                           each carries its from:, a key and a cursor; named: `serve --agent`
 *   after a restart         50 records addressed to an agent landed while its server was down
 *                           (on top of 100 older ones it had handled): what it spends to have them.
 *                           Unnamed, the recipe's catch-up from relay-0000 then its loop from
 *                           relay-0000 until a call brings nothing; named, waits with no arguments
 *                           until one brings nothing
 *   wake                    a record appended through one server, until it is in an idle agent's
 *                           hands: pushed as a channel notification (serve --agent --channel, a raw
 *                           client reading the pipe; the last push a burst window ago), against a
 *                           named wait_for_relay blocked in the same way
 *   mark write              what moving an agent's mark costs per delivery (store.agents.deliver: the
 *                           mark file written and fsynced), against a durable append beside it
 *   roster news             the CPU a named wait's answer spends asking whether who is here changed
 *                           (rosterNews, nothing changed for over a second), on rosters of 20 and 200
 *                           names each with an about, against reading the whole roster as it did
 *                           before it asked the names first
 *
 * Every process is a real `p-e-relay serve` on one fresh corpus, driven by
 * the SDK's client (the push by the raw JSON-RPC client of test/support/raw-stdio.ts).
 */
import path from 'node:path';
import type { BenchContext, Section } from '../lib/context.js';
import { emptyCorpus } from '../lib/corpus.js';
import { relayServer, type StdioPeer } from '../lib/procs.js';
import { nowMs, sleep } from '../lib/stats.js';
import { rawSession } from '../../test/support/raw-stdio.js';
import { WINDOW_MS } from '../../lib/mcp/channel/channel-push.js';
import { rosterNews } from '../../lib/mcp/tools/roster-news.js';
import { openStore } from '../../lib/store/store.js';

const RESTART_WAITING = 50;
const RESTART_HANDLED = 100;

/** A peer whose calls are counted: calls, and bytes of arguments and results as JSON. */
interface Counted {
  peer: StdioPeer;
  calls: number;
  bytes: number;
  call(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>>;
}

function counted(peer: StdioPeer): Counted {
  const c: Counted = {
    peer,
    calls: 0,
    bytes: 0,
    async call(name, args) {
      const result = await peer.call(name, args);
      c.calls++;
      c.bytes += Buffer.byteLength(JSON.stringify(args)) + Buffer.byteLength(JSON.stringify({ content: result.content, structuredContent: result.structuredContent }));
      return (result.structuredContent ?? {}) as Record<string, unknown>;
    },
  };
  return c;
}

const reset = (...peers: Counted[]) => peers.forEach((p) => ((p.calls = 0), (p.bytes = 0)));
type Appeared = { id: string; kind: string | null; parent: string | null; from: string | null }[];

/** One question and its answer, the recipes' way, named or not. Returns the calls and bytes both agents spent. */
async function askAndAnswer(asker: Counted, answerer: Counted, named: boolean, n: number, cursors: Map<Counted, string>): Promise<void> {
  const loop = async (agent: Counted, me: string) => {
    const args = named ? {} : { to: [me, 'all'], include_bytes: true, after: cursors.get(agent) ?? 'relay-0000', timeout_ms: 10_000 };
    const answer = await agent.call('wait_for_relay', args);
    if (!named) cursors.set(agent, answer.cursor as string);
    return answer.appeared as Appeared;
  };
  const from = (me: string) => (named ? '' : `from: ${me}\n`);
  const q = await asker.call('append_relay', { bytes: `@p-e/x0\nkind: question\n${from('ana')}to: bob\n\nquestion ${n}: what is ${n} + ${n}?`, ...(named ? {} : { idempotency_key: `ana/q/${n}` }) });
  const got = (await loop(answerer, 'bob')).find((item) => item.kind === 'question');
  if (!got) throw new Error('the answerer did not get the question');
  await answerer.call('append_relay', { bytes: `@p-e/x0\nkind: answer\n${from('bob')}to: ana\nparent: ${got.id}\n\n${2 * n}`, ...(named ? {} : { idempotency_key: `bob/answer/${got.id}` }) });
  const answers = await loop(asker, 'ana');
  if (!answers.some((item) => item.parent === q.id)) throw new Error('the asker did not get the answer');
}

async function perQuestion(ctx: BenchContext, named: boolean, questions: number): Promise<{ calls: number; bytes: number; listing: number }> {
  const store = await emptyCorpus(ctx.tmp, 4);
  const [a, b] = await Promise.all(['ana', 'bob'].map((agent) => relayServer(store.corpus, named ? ['--agent', agent] : [])));
  try {
    const asker = counted(a!);
    const answerer = counted(b!);
    const cursors = new Map<Counted, string>();
    // Warm both (and, named, make their marks) before counting.
    await askAndAnswer(asker, answerer, named, 0, cursors);
    reset(asker, answerer);
    for (let i = 1; i <= questions; i++) await askAndAnswer(asker, answerer, named, i, cursors);
    const listing = Buffer.byteLength(JSON.stringify((await a!.client.listTools()).tools)) + Buffer.byteLength(a!.client.getInstructions() ?? '');
    return { calls: (asker.calls + answerer.calls) / questions, bytes: (asker.bytes + answerer.bytes) / questions, listing };
  } finally {
    await Promise.all([a!.close(), b!.close()]);
    await store.dispose();
  }
}

/** 100 handled records, the server down, 50 more addressed to it; then what the restarted agent spends to have the 50. */
async function afterRestart(ctx: BenchContext, named: boolean): Promise<{ calls: number; bytes: number }> {
  const store = await emptyCorpus(ctx.tmp, 4);
  const args = named ? ['--agent', 'bob'] : [];
  const other = counted(await relayServer(store.corpus));
  try {
    const first = counted(await relayServer(store.corpus, args));
    for (let i = 0; i < RESTART_HANDLED; i++) await other.call('append_relay', { bytes: `@p-e/x0\nkind: note\nfrom: ana\nto: bob\n\nolder note ${i}` });
    // bob handles them (named: its mark moves past them; unnamed: it will have lost its cursor with its context).
    if (named) for (let i = 0; i < 3 && ((await first.call('wait_for_relay', { timeout_ms: 0 })).appeared as Appeared).length; i++);
    await first.peer.close();
    for (let i = 0; i < RESTART_WAITING; i++) await other.call('append_relay', { bytes: `@p-e/x0\nkind: question\nfrom: ana\nto: bob\n\nwaiting question ${i}` });
    const bob = counted(await relayServer(store.corpus, args));
    try {
      const seen = new Set<string>();
      if (named) {
        for (let i = 0; i < 20; i++) {
          const items = (await bob.call('wait_for_relay', { timeout_ms: 0 })).appeared as Appeared;
          items.forEach((item) => seen.add(item.id));
          if (items.length === 0) break;
        }
      } else {
        await bob.call('wait_for_relay', { from: 'bob', after: 'relay-0000', timeout_ms: 0, include_bytes: true });
        let after = 'relay-0000';
        for (let i = 0; i < 50; i++) {
          const answer = await bob.call('wait_for_relay', { to: ['bob', 'all'], after, timeout_ms: 0, include_bytes: true });
          const items = answer.appeared as (Appeared[number] & { bytesOmitted?: true })[];
          const inlined = items.filter((item) => !item.bytesOmitted);
          inlined.forEach((item) => seen.add(item.id));
          if (items.length === 0) break;
          // bytesOmitted: go on after the last inlined item, as the recipe says; else after the cursor.
          after = inlined.length < items.length ? (inlined.at(-1)?.id ?? after) : (answer.cursor as string);
        }
      }
      const waiting = [...seen].filter((id) => Number(id.slice(-4)) > RESTART_HANDLED).length;
      if (waiting < RESTART_WAITING) throw new Error(`the restarted agent had ${waiting} of the ${RESTART_WAITING} waiting records`);
      return { calls: bob.calls, bytes: bob.bytes };
    } finally {
      await bob.peer.close();
    }
  } finally {
    await other.peer.close();
    await store.dispose();
  }
}

/** Append → in hand: a channel push, and a blocked named wait, sampled alternately on one corpus. */
async function wakeSamples(ctx: BenchContext, n: number): Promise<{ push: number[]; wait: number[] }> {
  const store = await emptyCorpus(ctx.tmp, 4);
  const writer = await relayServer(store.corpus);
  const pushed = await rawSession(store.corpus, ['--agent', 'bob', '--channel'], { env: { P_E_RELAY_LOG: 'warn' } });
  const waiter = await relayServer(store.corpus, ['--agent', 'carol']);
  const samples = { push: [] as number[], wait: [] as number[] };
  try {
    await pushed.tool('wait_for_relay', { timeout_ms: 0 });
    await waiter.call('wait_for_relay', { timeout_ms: 0 });
    for (let i = 0; i < n; i++) {
      // An idle session: the last push is more than a burst window ago (a push inside one waits for its end).
      await sleep(WINDOW_MS + 20);
      const seen = pushed.notifications.length;
      let t0 = nowMs();
      const notified = pushed.next('notifications/claude/channel', 10_000, seen);
      await writer.call('append_relay', { bytes: `@p-e/x0\nkind: note\nfrom: ana\nto: bob\n\npush ${i}` });
      await notified;
      samples.push.push(nowMs() - t0);
      await sleep(20);
      const waiting = waiter.call('wait_for_relay', { timeout_ms: 10_000 });
      await sleep(20); // the wait is blocked before the append, as an idle agent's is
      t0 = nowMs();
      await writer.call('append_relay', { bytes: `@p-e/x0\nkind: note\nfrom: ana\nto: carol\n\nwait ${i}` });
      await waiting;
      samples.wait.push(nowMs() - t0);
      await sleep(20);
    }
    return samples;
  } finally {
    await Promise.all([writer.close(), pushed.close(), waiter.close()]);
    await store.dispose();
  }
}

/** ms per delivery of store.agents.deliver (one id, durably), and per durable append, interleaved in one process. */
async function markCost(ctx: BenchContext, n: number): Promise<{ mark: number; append: number }> {
  const dir = await emptyCorpus(ctx.tmp, 6);
  const store = await openStore({ corpus: dir.corpus });
  try {
    const ids: string[] = [];
    let appendMs = 0;
    let markMs = 0;
    for (let i = 0; i < n; i++) {
      let t0 = nowMs();
      const { id } = await store.append(Buffer.from(`@p-e/x0\nkind: note\nto: bob\n\nnote ${i}`), { depositedBy: 'bench' });
      appendMs += nowMs() - t0;
      ids.push(id);
      t0 = nowMs();
      await store.agents.deliver('bob', null, [id]);
      markMs += nowMs() - t0;
    }
    return { mark: markMs / n, append: appendMs / n };
  } finally {
    await store.close();
    await dir.dispose();
  }
}

/** The roster sizes measured: --quick leaves out the small one (each size waits a second for its abouts to settle). */
const rosterSizes = (ctx: BenchContext) => (ctx.quick ? [200] : [20, 200]);

/** CPU-ms per call of rosterNews with nothing new, and of a whole roster read, on a roster of `names`, interleaved in one process. */
async function rosterCost(ctx: BenchContext, names: number, calls: number): Promise<{ news: number; whole: number }> {
  const dir = await emptyCorpus(ctx.tmp, 6);
  const store = await openStore({ corpus: dir.corpus, watch: 'none' });
  const cpuMs = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  try {
    await store.open();
    await Promise.all(Array.from({ length: names }, async (_, i) => {
      await store.agents.roster.seen(`agent-${i}`, 'served');
      await store.agents.roster.stated(`agent-${i}`, `knows part ${i} of the corpus`, i + 1);
    }));
    // A roster as a swarm's mostly is: still for over a second since this process first saw it (a look within
    // that second reads every about again).
    await rosterNews(store, 'agent-0'); // told once: every call after has nothing new
    await sleep(1100);
    await rosterNews(store, 'agent-0');
    let news = 0;
    let whole = 0;
    for (let i = 0; i < calls; i++) {
      let t0 = cpuMs();
      if ((await rosterNews(store, 'agent-0')) !== undefined) throw new Error('the roster changed under the bench');
      news += cpuMs() - t0;
      t0 = cpuMs();
      await store.roster();
      whole += cpuMs() - t0;
    }
    return { news: news / calls, whole: whole / calls };
  } finally {
    await store.close();
    await dir.dispose();
  }
}

export const agentsSection: Section = {
  name: 'agents',
  title: 'Agents with a name: what an agent spends per question and after a restart, push against wait, the mark write',
  async run(ctx) {
    const { results, reps } = ctx;
    const section = 'Agents (named)';
    const questions = ctx.window(20, 4);
    const v = new Map<string, number[]>();
    const add = (key: string, value: number) => v.set(key, [...(v.get(key) ?? []), value]);
    for (let r = 0; r < reps; r++) {
      for (const named of [false, true]) {
        const label = named ? 'named' : 'unnamed';
        const q = await perQuestion(ctx, named, questions);
        add(`calls|${label}`, q.calls);
        add(`bytes|${label}`, q.bytes);
        add(`listing|${label}`, q.listing);
        const restart = await afterRestart(ctx, named);
        add(`restart calls|${label}`, restart.calls);
        add(`restart bytes|${label}`, restart.bytes);
      }
      const wake = await wakeSamples(ctx, ctx.window(30, 6));
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      add('wake push', median(wake.push));
      add('wake wait', median(wake.wait));
      const cost = await markCost(ctx, ctx.window(200, 30));
      add('mark', cost.mark);
      add('append', cost.append);
      for (const names of rosterSizes(ctx)) {
        const roster = await rosterCost(ctx, names, ctx.window(50, 10));
        add(`roster news ${names}`, roster.news);
        add(`roster whole ${names}`, roster.whole);
      }
      ctx.log(`agents: repetition ${r + 1} of ${reps} done`);
    }
    const pair = (name: string, key: string, unit: string) =>
      results.add({ section, name, unit, values: v.get(`${key}|named`)!, reference: { name: 'unnamed recipes', values: v.get(`${key}|unnamed`)! } });
    pair('tool calls per answered question, asker + answerer', 'calls', 'calls');
    pair('bytes per answered question (JSON in and out), asker + answerer', 'bytes', 'B');
    pair('listing + instructions, read once per session', 'listing', 'B');
    pair(`after a restart with ${RESTART_WAITING} records waiting: tool calls to have them`, 'restart calls', 'calls');
    pair(`after a restart with ${RESTART_WAITING} records waiting: bytes read and sent`, 'restart bytes', 'B');
    results.add({ section, name: 'wake: append → pushed channel notification in hand (median)', unit: 'ms', values: v.get('wake push')!, reference: { name: 'a blocked named wait_for_relay', values: v.get('wake wait')! } });
    results.add({ section, name: 'mark write per delivery (store.agents.deliver, fsynced)', unit: 'ms', values: v.get('mark')!, reference: { name: 'a durable append', values: v.get('append')! } });
    for (const names of rosterSizes(ctx)) {
      results.add({ section, name: `roster news: CPU a named wait's answer spends learning who is here did not change, ${names} names`, unit: 'ms', values: v.get(`roster news ${names}`)!, reference: { name: 'reading the whole roster', values: v.get(`roster whole ${names}`)! } });
    }
    results.note(`agents: ${questions} questions per repetition between two stdio servers (ana asks bob); restart: ${RESTART_HANDLED} handled records, then ${RESTART_WAITING} to the agent while its server was down; wake: medians of ${ctx.window(30, 6)} alternating samples; bytes are JSON.stringify of each call's arguments and of its result's content and structuredContent (${path.basename(import.meta.url)})`);
  },
};
