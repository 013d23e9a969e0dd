/**
 * One agent task on every door, counted as an agent's host would pay for it:
 *
 *   ask → answer → restart, with a backlog   ana asks bob, bob answers, ana has the answer;
 *                                            bob's server is stopped, ana asks again while
 *                                            it is down, bob starts again and answers. Before
 *                                            either starts, 40 records between two other agents
 *                                            are in the corpus.
 *
 * Doors: stdio (`serve --agent NAME`, one server per agent), the hub's /mcp
 * (the SDK's Streamable HTTP client, signing every request as the agent),
 * and the bridge (`bridge --agent NAME` in front of the same hub). The
 * client is the v2 SDK in `auto` mode (2026-07-28), and it behaves like the
 * command-line hosts agents were driven with: it asks for the tool list
 * before every call, and honours the list's cache hints, so a door that
 * answers `ttlMs: 0` is listed again on every call.
 *
 * Per door: tool calls, bytes of calls (JSON of each call's arguments and
 * of its result's content and structuredContent: what a model writes and
 * reads), those bytes per call and how many of them are the answers'
 * `reply`, `open` and `next` (the contract said where it applies), bytes of listings that went over the wire (and how many), and the
 * instructions. The bridge's goal is at most 1.2× stdio's bytes, no more
 * calls, and one listing per session.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { openStore } from '../../lib/store/store.js';
import { signingFetch } from '../../test/support/http-helpers.js';
import type { BenchContext, Section } from '../lib/context.js';
import { emptyCorpus } from '../lib/corpus.js';
import { startHub } from '../lib/http-load.js';
import { BIN } from '../lib/paths.js';

const BACKLOG = 40;
type Door = 'stdio' | 'hub' | 'bridge';
const DOORS: Door[] = ['stdio', 'hub', 'bridge'];

interface Tally {
  calls: number;
  callBytes: number;
  /** Of callBytes: what the answers say of the contract at the moment it applies (reply, open, next, in both forms). */
  contractBytes: number;
  listings: number;
  listingBytes: number;
  instructionBytes: number;
  sessions: number;
}

const tally = (): Tally => ({ calls: 0, callBytes: 0, contractBytes: 0, listings: 0, listingBytes: 0, instructionBytes: 0, sessions: 0 });

/** One agent's session on a door: a host that lists before each call and counts what crosses the wire. */
interface Session {
  call(name: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

interface Wire {
  start(message: unknown): void;
  onmessage?: ((message: unknown, extra?: unknown) => void) | undefined;
  send(message: unknown, options?: unknown): Promise<void>;
}

/** Counts tools/list requests the client really sent, and the bytes of their answers. */
function countListings(transport: Wire, t: Tally): void {
  const listIds = new Set<unknown>();
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const m = message as { id?: unknown; method?: string };
    if (m.method === 'tools/list') {
      t.listings++;
      listIds.add(m.id);
    }
    return send(message, options);
  };
  const start = transport.start.bind(transport);
  transport.start = (...args: [unknown]) => {
    const deliver = transport.onmessage!;
    transport.onmessage = (message, extra) => {
      const m = message as { id?: unknown; result?: unknown };
      if (m.id !== undefined && listIds.delete(m.id)) t.listingBytes += Buffer.byteLength(JSON.stringify(m.result));
      deliver(message, extra);
    };
    return start(...args);
  };
}

/** The same count over HTTP, at the fetch: each request's body says its method, and its answer's bytes are the listing's. */
function countingFetch(inner: typeof fetch, t: Tally): typeof fetch {
  return async (input, init = {}) => {
    const listing = typeof init.body === 'string' && (JSON.parse(init.body) as { method?: string }).method === 'tools/list';
    const response = await inner(input, init);
    if (!listing) return response;
    t.listings++;
    const text = await response.text();
    t.listingBytes += Buffer.byteLength(JSON.stringify((JSON.parse(text) as { result?: unknown }).result));
    return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

async function open(door: Door, agent: string, env: { corpus: string; keys: string; hubUrl: string }, t: Tally): Promise<Session> {
  const client = new Client({ name: 'p-e-relay-bench-host', version: '0.0.0' }, { versionNegotiation: { mode: 'auto' } as never });
  let transport: Wire;
  if (door === 'hub') {
    const key = (await readKey(env.keys, agent))!;
    transport = new StreamableHTTPClientTransport(new URL('/mcp', env.hubUrl), { fetch: countingFetch(signingFetch(agent, key), t) }) as unknown as Wire;
  } else {
    const args = door === 'stdio' ? ['serve', '--corpus', env.corpus, '--agent', agent] : ['bridge', '--url', env.hubUrl, '--agent', agent, '--keys', env.keys];
    transport = new StdioClientTransport({ command: BIN, args, env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' }, stderr: 'ignore' }) as unknown as Wire;
    countListings(transport, t);
  }
  await client.connect(transport as never);
  t.sessions++;
  t.instructionBytes += Buffer.byteLength(client.getInstructions() ?? '');
  return {
    async call(name, args = {}) {
      await client.listTools();
      const result = (await client.callTool({ name, arguments: args }, { timeout: 120_000 })) as CallToolResult;
      t.calls++;
      t.callBytes += Buffer.byteLength(JSON.stringify(args)) + Buffer.byteLength(JSON.stringify({ content: result.content, structuredContent: result.structuredContent }));
      t.contractBytes += contractBytes(result);
      if (result.isError) throw new Error(`${door}: ${name} refused: ${JSON.stringify(result.content)}`);
      return (result.structuredContent ?? {}) as Record<string, unknown>;
    },
    close: () => client.close(),
  };
}

type Item = { id: string; kind: string | null; parent: string | null };

/**
 * The bytes of an answer that carry the contract where it applies: each
 * `reply`, `open` and `next` field as JSON (`,"next":"…"`) and their lines
 * in the text as JSON-escaped (`\n  reply: …`), as a host reads them.
 */
function contractBytes(result: CallToolResult): number {
  const s = (result.structuredContent ?? {}) as { appeared?: { reply?: string }[]; open?: string[]; next?: string };
  const field = (key: string, value: unknown) => (value === undefined ? 0 : Buffer.byteLength(`,"${key}":${JSON.stringify(value)}`));
  let bytes = field('open', s.open) + field('next', s.next);
  for (const item of s.appeared ?? []) bytes += field('reply', item.reply);
  for (const block of result.content as { type: string; text?: string }[]) {
    for (const line of (block.text ?? '').split('\n')) {
      if (/^(next: |open \(|  reply: )/.test(line)) bytes += Buffer.byteLength(JSON.stringify('\n' + line)) - 2;
    }
  }
  return bytes;
}

/** Waits (no arguments: the relay keeps the place) until an item passes `wanted`; returns it. */
async function waitFor(session: Session, wanted: (item: Item) => boolean): Promise<Item> {
  for (let i = 0; i < 10; i++) {
    const items = (await session.call('wait_for_relay', {})).appeared as Item[];
    const found = items.find(wanted);
    if (found) return found;
  }
  throw new Error('the awaited record never came');
}

async function task(ctx: BenchContext, door: Door): Promise<Tally> {
  const store = await emptyCorpus(ctx.tmp, 4);
  const t = tally();
  const hub = door === 'stdio' ? null : await startHub(store.corpus, store.keys);
  try {
    await Promise.all(['ana', 'bob'].map((agent) => addKey(store.keys, agent)));
    const backlog = await openStore({ corpus: store.corpus });
    for (let i = 0; i < BACKLOG; i++) await backlog.append(Buffer.from(`@p-e/x0\nkind: note\nfrom: carol\nto: dave\n\nbacklog note ${i}`), { depositedBy: 'cli/bench' });
    await backlog.close();
    const env = { corpus: store.corpus, keys: store.keys, hubUrl: hub ? `http://127.0.0.1:${hub.port}` : '' };

    const ana = await open(door, 'ana', env, t);
    let bob = await open(door, 'bob', env, t);
    const ask = (n: number) => ana.call('append_relay', { bytes: `@p-e/x0\nkind: question\nto: bob\n\nQuestion ${n}: what is ${n} + ${n}?` });
    const answer = (q: Item) => bob.call('append_relay', { bytes: `@p-e/x0\nkind: answer\nto: ana\nparent: ${q.id}\n\n${q.id} has the answer.` });

    const first = (await ask(1)).id as string;
    await answer(await waitFor(bob, (item) => item.kind === 'question'));
    await waitFor(ana, (item) => item.parent === first);

    await bob.close();
    const second = (await ask(2)).id as string;
    // A new session's first requests repeat the old one's bytes (the client numbers them from 0 again), and the hub
    // takes a signature once: the same body signed in the same second is a replay. Start the new session in the next second.
    await new Promise((resolve) => setTimeout(resolve, 1005 - (Date.now() % 1000)));
    bob = await open(door, 'bob', env, t);
    await answer(await waitFor(bob, (item) => item.kind === 'question'));
    await waitFor(ana, (item) => item.parent === second);
    await Promise.all([ana.close(), bob.close()]);
    return t;
  } finally {
    await hub?.stop();
    await store.dispose();
  }
}

export const doorsSection: Section = {
  name: 'doors',
  title: 'One agent task on every door: calls, bytes of calls, listings',
  async run(ctx) {
    const { results, reps } = ctx;
    const section = 'One task on every door';
    const v = new Map<string, number[]>();
    const add = (key: string, value: number) => v.set(key, [...(v.get(key) ?? []), value]);
    for (let r = 0; r < reps; r++) {
      for (const door of DOORS) {
        const t = await task(ctx, door);
        add(`calls|${door}`, t.calls);
        add(`bytes|${door}`, t.callBytes);
        add(`bytes per call|${door}`, t.callBytes / t.calls);
        add(`contract bytes per call|${door}`, t.contractBytes / t.calls);
        add(`listings per session|${door}`, t.listings / t.sessions);
        add(`listing bytes|${door}`, t.listingBytes);
        add(`instructions|${door}`, t.instructionBytes / t.sessions);
        add(`all bytes|${door}`, t.callBytes + t.listingBytes + t.instructionBytes);
      }
      ctx.log(`doors: repetition ${r + 1} of ${reps} done`);
    }
    const stdio = (key: string) => ({ name: 'stdio serve --agent', values: v.get(`${key}|stdio`)! });
    for (const door of ['hub', 'bridge'] as const) {
      const label = door === 'hub' ? 'hub /mcp, signed' : 'bridge + hub';
      results.add({ section, name: `${label}: tool calls`, unit: 'calls', values: v.get(`calls|${door}`)!, reference: stdio('calls'), goal: { on: 'ratio', op: '<=', target: 1, source: 'no more calls than stdio' } });
      results.add({ section, name: `${label}: bytes of calls`, unit: 'B', values: v.get(`bytes|${door}`)!, reference: stdio('bytes') });
      results.add({ section, name: `${label}: all bytes (calls, listings, instructions)`, unit: 'B', values: v.get(`all bytes|${door}`)!, reference: stdio('all bytes'), goal: { on: 'ratio', op: '<=', target: 1.2, source: 'at most 1.2× stdio' } });
      results.add({ section, name: `${label}: tools/list sent per session`, unit: 'lists', values: v.get(`listings per session|${door}`)!, goal: { on: 'value', op: '<=', target: 1, source: 'one listing per session' } });
      results.add({ section, name: `${label}: listing bytes over the wire`, unit: 'B', values: v.get(`listing bytes|${door}`)!, reference: stdio('listing bytes') });
      results.add({ section, name: `${label}: instructions`, unit: 'B', values: v.get(`instructions|${door}`)!, reference: stdio('instructions') });
    }
    for (const door of DOORS) {
      const label = door === 'stdio' ? 'stdio serve --agent' : door === 'hub' ? 'hub /mcp, signed' : 'bridge + hub';
      results.add({ section, name: `${label}: bytes per call`, unit: 'B', values: v.get(`bytes per call|${door}`)! });
      results.add({ section, name: `${label}: of which the answers' reply, open and next`, unit: 'B', values: v.get(`contract bytes per call|${door}`)! });
    }
    results.add({ section, name: 'stdio serve --agent: tools/list sent per session', unit: 'lists', values: v.get('listings per session|stdio')!, goal: { on: 'value', op: '<=', target: 1, source: 'one listing per session' } });
    results.note(`doors: ask → answer → restart → ask → answer between ana and bob (3 sessions), ${BACKLOG} records between others already held; the v2 client in auto mode lists before every call and honours cache hints (bench/sections/doors.ts)`);
  },
};
