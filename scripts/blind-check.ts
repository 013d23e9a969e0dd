/**
 * A blind check of the agent contract: a reader who has seen only the
 * bridge's tool listing and instructions drives agent `ana` through four
 * tasks, against a real hub on loopback, through a real `p-e-relay bridge`,
 * with scripted peers answering over the hub's /mcp. Nothing here tells the
 * reader how the relay works; the scene and the checks are plain facts.
 *
 *   node --import tsx scripts/blind-check.ts up DIR [--no-instructions]   build the scene in DIR and serve it until killed
 *   node --import tsx scripts/blind-check.ts listing DIR   the bridge's tools/list and instructions, as ana's host sees them
 *                                                          (the tools alone when up was given --no-instructions)
 *   node --import tsx scripts/blind-check.ts call DIR TOOL 'JSON'   one tool call through ana's host (prints the result)
 *   node --import tsx scripts/blind-check.ts restart DIR   ana's host restarts: a new bridge process, a new session
 *   node --import tsx scripts/blind-check.ts check DIR     which of the four goals the corpus shows reached
 *   node --import tsx scripts/blind-check.ts literal DIR [--with-instructions]
 *       the scene, a literal reader's plan for the four tasks run through it, then check, with
 *       ana's calls and bytes per task (see `literal` below)
 *
 * The scene: keys for ana, bob, carol and dave; bob and carol state what
 * they know (a kind: about record each) and answer questions addressed to
 * them; 40 notes between others; then, after ana's first session has
 * started, carol asks ana a question and dave asks everyone one that carol
 * has already answered in part. The reader is told what ana knows (two
 * ports) and the four tasks:
 *
 *   1. ask a peer and get the answer     bob's launch code word (HERON)
 *   2. serve again after a restart       answer carol's question (8443)
 *   3. a broadcast it knows part of      add 9090 to carol's 7077
 *   4. find who knows X                  who knows the deploy schedule (carol), and ask her
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { addKey, readKey } from '../lib/auth/keys.js';
import { initStore } from '../lib/ops/init.js';
import { openStore } from '../lib/store/store.js';
import { signingFetch } from '../test/support/http-helpers.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const BIN = path.join(ROOT, 'bin', 'p-e-relay');

const ABOUTS: Record<string, string> = {
  bob: 'knows the launch codes and the release names',
  carol: 'knows the deploy schedule and the on-call rota',
  dave: 'runs the build farm',
};
/** What each scripted peer answers, by a word in the question. */
const KNOWS: Record<string, [RegExp, string][]> = {
  bob: [[/code word/i, 'The launch code word is HERON.']],
  carol: [[/deploy/i, 'The next deploy is Thursday at 14:00 UTC.']],
};

type Item = { id: string; kind: string | null; from: string | null; to: string | null; bytes?: string };

function client(): Client {
  return new Client({ name: 'blind-check', version: '0.0.0' }, { versionNegotiation: { mode: 'auto' } as never });
}

async function signedClient(url: string, keys: string, agent: string): Promise<Client> {
  const c = client();
  await c.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { fetch: signingFetch(agent, (await readKey(keys, agent))!) }));
  return c;
}

async function call(c: Client, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const result = (await c.callTool({ name, arguments: args }, { timeout: 120_000 })) as CallToolResult;
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  return (result.structuredContent ?? {}) as Record<string, unknown>;
}

const record = (headers: Record<string, string>, body: string) =>
  ['@p-e/x0', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', body].join('\n');

/** A scripted peer: waits (the relay keeps its place) and answers what is addressed to it by name. */
async function peerLoop(c: Client, me: string, stop: AbortSignal): Promise<void> {
  while (!stop.aborted) {
    const answer = await call(c, 'wait_for_relay', { timeout_ms: 20_000 }).catch(() => null);
    for (const item of (answer?.appeared as Item[] | undefined) ?? []) {
      if (item.kind?.toLowerCase() !== 'question' || !(item.to ?? '').split(/[\s,]+/).includes(me)) continue;
      const text = KNOWS[me]?.find(([asked]) => asked.test(item.bytes ?? ''))?.[1] ?? 'I do not know that.';
      await call(c, 'append_relay', { bytes: record({ kind: 'answer', from: me, to: item.from ?? 'all', parent: item.id }, text) }).catch(() => {});
    }
  }
}

function startHub(corpus: string, keys: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--http', '--port', '0', '--corpus', corpus, '--keys', keys], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'info' } });
  let text = '';
  return new Promise((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      const url = /serving (http:\/\/\S+) \(/.exec(text)?.[1];
      if (url) resolve({ child, url });
    });
    child.on('exit', (code) => reject(new Error(`the hub exited (${code}): ${text}`)));
  });
}

/** Ana's host: one bridge session at a time, held open between calls, logging every call. */
class Host {
  private session: Client | null = null;
  constructor(private readonly url: string, private readonly keys: string, private readonly log: string) {}

  async open(): Promise<Client> {
    if (this.session) return this.session;
    const c = client();
    await c.connect(new StdioClientTransport({ command: BIN, args: ['bridge', '--url', this.url, '--agent', 'ana', '--keys', this.keys], stderr: 'ignore', env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' } }));
    this.session = c;
    return c;
  }

  async close(): Promise<void> {
    await this.session?.close();
    this.session = null;
  }

  async restart(): Promise<void> {
    await this.session?.close();
    this.session = null;
    await this.open();
  }

  async listing(): Promise<unknown> {
    const c = await this.open();
    return { instructions: c.getInstructions(), tools: (await c.listTools()).tools };
  }

  /** What the calls are for from now on, written in the transcript (the literal reader's plan tags them). */
  task = '';

  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const c = await this.open();
    const result = (await c.callTool({ name, arguments: args }, { timeout: 120_000 })) as CallToolResult;
    const line = { at: new Date().toISOString(), task: this.task, name, args, isError: result.isError ?? false, bytesSent: Buffer.byteLength(JSON.stringify(args)), bytesRead: Buffer.byteLength(JSON.stringify({ content: result.content, structuredContent: result.structuredContent })) };
    await fs.appendFile(this.log, JSON.stringify(line) + '\n');
    // What the reader read, beside the transcript, for whoever judges a run.
    await fs.appendFile(this.log.replace(/\.jsonl$/, '.answers.jsonl'), JSON.stringify({ task: this.task, name, result }) + '\n');
    return result;
  }
}

interface Scene {
  host: Host;
  end(): Promise<void>;
}

/** The scene in `dir`: the hub, the scripted peers, ana's host after its restart; `end` stops it all. */
async function scene(dir: string): Promise<Scene> {
  const corpus = path.join(dir, 'corpus');
  const keys = path.join(dir, 'keys');
  await initStore({ corpus, keys });
  for (const agent of ['ana', 'bob', 'carol', 'dave']) await addKey(keys, agent);
  const store = await openStore({ corpus });
  for (let i = 0; i < 40; i++) await store.append(Buffer.from(record({ kind: 'note', from: i % 2 ? 'dave' : 'carol', to: i % 2 ? 'carol' : 'dave' }, `Build ${i} finished.`)), { depositedBy: 'cli/scene' });
  await store.close();
  const hub = await startHub(corpus, keys);
  const stop = new AbortController();
  const peers: Record<string, Client> = {};
  for (const agent of ['bob', 'carol', 'dave']) {
    peers[agent] = await signedClient(hub.url, keys, agent);
    await call(peers[agent]!, 'append_relay', { bytes: record({ kind: 'about', from: agent }, ABOUTS[agent]!) });
  }
  const loops = ['bob', 'carol'].map((agent) => peerLoop(peers[agent]!, agent, stop.signal));

  const host = new Host(hub.url, keys, path.join(dir, 'transcript.jsonl'));
  // Ana's first session starts before the others write to her, as a swarm's agents do; the reader begins on the next one.
  await host.call('wait_for_relay', { timeout_ms: 0 });
  for (const file of ['transcript.jsonl', 'transcript.answers.jsonl']) await fs.rm(path.join(dir, file), { force: true });
  const q = await call(peers.carol!, 'append_relay', { bytes: record({ kind: 'question', from: 'carol', to: 'ana' }, 'What port does the staging gateway listen on?') });
  const broadcast = await call(peers.dave!, 'append_relay', { bytes: record({ kind: 'question', from: 'dave', to: 'all' }, 'Which ports does the relay service use? List every one you know.') });
  await call(peers.carol!, 'append_relay', { bytes: record({ kind: 'answer', from: 'carol', to: 'dave', parent: broadcast.id as string }, '7077, for HTTP.') });
  await host.restart();
  await fs.writeFile(path.join(dir, 'scene.json'), JSON.stringify({ hub: hub.url, carolQuestion: q.id, daveBroadcast: broadcast.id }, null, 2));
  return {
    host,
    async end() {
      stop.abort();
      await host.close();
      await Promise.all(Object.values(peers).map((c) => c.close().catch(() => {})));
      hub.child.kill('SIGTERM');
      await Promise.allSettled(loops);
    },
  };
}

async function up(dir: string, withhold: boolean): Promise<void> {
  const { host, end: endScene } = await scene(dir);
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    try {
      const { op, name, args } = JSON.parse(body || '{}') as { op: string; name?: string; args?: Record<string, unknown> };
      // Withheld, the reader sees what a host that drops the instructions shows: the tools alone.
      const listing = async () => (withhold ? { tools: ((await host.listing()) as { tools: unknown }).tools } : await host.listing());
      const out = op === 'restart' ? (await host.restart(), { restarted: true }) : op === 'listing' ? await listing() : await host.call(name!, args ?? {});
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out, null, 2));
    } catch (err) {
      res.writeHead(500).end(String((err as Error).message));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await fs.writeFile(path.join(dir, 'host.json'), JSON.stringify({ port: (server.address() as { port: number }).port }));
  process.stderr.write(`blind-check: the scene is up in ${dir}\n`);
  const end = () => {
    server.close();
    void endScene().then(() => process.exit(0));
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.once('SIGTERM', end);
  process.once('SIGINT', end);
}

async function toHost(dir: string, message: Record<string, unknown>): Promise<void> {
  const { port } = JSON.parse(await fs.readFile(path.join(dir, 'host.json'), 'utf8')) as { port: number };
  const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: JSON.stringify(message) });
  process.stdout.write((await res.text()) + '\n');
  if (!res.ok) process.exitCode = 1;
}

/** Which goals the corpus shows reached: records ana's channel deposited, against the scene's. */
async function check(dir: string): Promise<void> {
  const scene = JSON.parse(await fs.readFile(path.join(dir, 'scene.json'), 'utf8')) as { carolQuestion: string; daveBroadcast: string };
  const store = await openStore({ corpus: path.join(dir, 'corpus'), readOnly: true });
  await store.open();
  const held: { id: string; deposit: string; text: string }[] = [];
  for (const id of (await store.list()).present) {
    const file = (await store.read(id)).toString('utf8');
    held.push({ id, deposit: /^deposited-by: (.*)$/m.exec(file)?.[1] ?? '', text: file.slice(file.indexOf('\n---\n') + 5) });
  }
  await store.close();
  const ana = held.filter((r) => r.deposit === 'mcp/ana');
  const header = (r: { text: string }, key: string) => new RegExp(`^${key}: *(.*)$`, 'mi').exec(r.text.split('\n\n')[0]!)?.[1]?.trim() ?? null;
  const askedBob = ana.find((r) => /question/i.test(header(r, 'kind') ?? '') && (header(r, 'to') ?? '').split(/[\s,]+/).includes('bob'));
  const askedCarol = ana.find((r) => /question/i.test(header(r, 'kind') ?? '') && (header(r, 'to') ?? '').split(/[\s,]+/).includes('carol') && /deploy/i.test(r.text));
  const answered = (parent: string | undefined, by: string) => parent !== undefined && held.some((r) => r.deposit === `mcp/${by}` && header(r, 'parent') === parent);
  const toCarol = ana.filter((r) => header(r, 'parent') === scene.carolQuestion);
  const toDave = ana.filter((r) => header(r, 'parent') === scene.daveBroadcast);
  const goals = [
    ['1. asked bob and bob answered', askedBob !== undefined && answered(askedBob.id, 'bob')],
    ['2. answered carol\'s question once, with 8443', toCarol.length === 1 && /8443/.test(toCarol[0]!.text)],
    ['3. added 9090 to the broadcast carol answered in part', toDave.length >= 1 && toDave.some((r) => /9090/.test(r.text))],
    ['4. found carol knows the deploy schedule, asked her, she answered', askedCarol !== undefined && answered(askedCarol.id, 'carol')],
  ] as const;
  for (const [goal, met] of goals) process.stdout.write(`${met ? 'reached' : 'NOT reached'}: ${goal}\n`);
  const transcript = (await fs.readFile(path.join(dir, 'transcript.jsonl'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { task?: string; bytesSent: number; bytesRead: number; isError: boolean });
  process.stdout.write(`ana's calls: ${transcript.length} (${transcript.filter((l) => l.isError).length} refused), ${transcript.reduce((s, l) => s + l.bytesSent + l.bytesRead, 0)} bytes sent and read; records ana stored: ${ana.length}\n`);
  const tasks = [...new Set(transcript.map((l) => l.task ?? ''))].filter(Boolean);
  for (const task of tasks) {
    const lines = transcript.filter((l) => l.task === task);
    process.stdout.write(`  ${task}: ${lines.length} calls, ${lines.reduce((s, l) => s + l.bytesSent + l.bytesRead, 0)} bytes\n`);
  }
  if (goals.some(([, met]) => !met)) process.exitCode = 1;
}

/**
 * A literal reader: the four tasks planned from what a reader is given, as
 * calls, and run through ana's host. It knows ana's two facts (the staging
 * gateway listens on 8443; the relay service also uses 9090) and the tasks.
 * Withheld (the default), it uses only what the tool listing and the
 * answers say: the ask recipe in append_relay's description, a question's
 * reply, the answer's open and next, the agents' about lines. With
 * `--with-instructions` it builds its answers from the instructions'
 * recipe instead (from: ana, to: the question's from: or all, parent:)
 * and states its about because the instructions say how; everything else
 * is the same plan. Each call is tagged with the task it serves; the
 * inbox waits, which serve all of them, are tagged `inbox`.
 */
async function literal(dir: string, withInstructions: boolean): Promise<void> {
  const { host, end } = await scene(dir);
  type Waited = { appeared: (Item & { parent?: string | null; reply?: string })[]; open?: string[]; next?: string; agents?: { name: string; about?: string }[] };
  const facts: [RegExp, string][] = [[/staging gateway/i, 'The staging gateway listens on 8443.'], [/relay service/i, 'The relay service also uses 9090.']];
  const structured = (r: CallToolResult) => r.structuredContent as unknown as Waited;
  const answered = new Set<string>();
  let agents: { name: string; about?: string }[] = [];
  let aboutStated = false;
  const asked = new Map<string, string>(); // question id → task
  const got = new Set<string>();
  const handle = async (w: Waited) => {
    if (w.agents) agents = w.agents;
    for (const item of w.appeared) {
      if (item.parent && asked.has(item.parent)) got.add(item.parent);
      if (item.kind?.toLowerCase() !== 'question' || answered.has(item.id)) continue;
      const fact = facts.find(([about]) => about.test(item.bytes ?? ''))?.[1];
      const toAll = (item.to ?? '').split(/[\s,]+/).includes('all');
      if (toAll && !fact) continue;
      host.task = toAll ? '3. add to a broadcast' : '2. serve after a restart';
      const head = withInstructions ? `@p-e/x0\nkind: answer\nfrom: ana\nto: ${item.from ?? 'all'}\nparent: ${item.id}\n\n` : item.reply;
      if (head === undefined) throw new Error(`${item.id}: the answer carries no reply to answer it with`);
      await host.call('append_relay', { bytes: `${head}${fact ?? 'I do not know that.'}` });
      answered.add(item.id);
    }
    const stateAbout = withInstructions ? !aboutStated : /kind: about/.test(w.next ?? '');
    if (stateAbout && !aboutStated) {
      host.task = '4. find who knows X';
      await host.call('append_relay', { bytes: '@p-e/x0\nkind: about\n\nknows the staging gateway and relay service ports' });
      aboutStated = true;
    }
  };
  const inbox = async () => {
    host.task = 'inbox';
    const w = structured(await host.call('wait_for_relay', {}));
    await handle(w);
    return w;
  };
  try {
    await inbox();
    host.task = '1. ask a peer';
    const q1 = (await host.call('append_relay', { bytes: '@p-e/x0\nkind: question\nto: bob\n\nWhat is the launch code word?' })).structuredContent as { id: string };
    asked.set(q1.id, host.task);
    const knower = agents.find((a) => /deploy/i.test(a.about ?? ''))?.name;
    if (knower) {
      host.task = '4. find who knows X';
      const q4 = (await host.call('append_relay', { bytes: `@p-e/x0\nkind: question\nto: ${knower}\n\nWhen is the next deploy?` })).structuredContent as { id: string };
      asked.set(q4.id, host.task);
    }
    for (let i = 0; i < 10 && got.size < asked.size; i++) await inbox();
  } finally {
    await end();
  }
  await check(dir);
}

const [verb, dir, ...rest] = process.argv.slice(2);
if (!verb || !dir) {
  process.stderr.write('usage: blind-check.ts up|listing|call|restart|check|literal DIR [TOOL JSON] [--no-instructions] [--with-instructions]\n');
  process.exit(2);
}
const at = path.resolve(dir);
if (verb === 'up') await up(at, rest.includes('--no-instructions'));
else if (verb === 'literal') await literal(at, rest.includes('--with-instructions'));
else if (verb === 'listing') await toHost(at, { op: 'listing' });
else if (verb === 'restart') await toHost(at, { op: 'restart' });
else if (verb === 'call') await toHost(at, { op: 'call', name: rest[0], args: JSON.parse(rest[1] ?? '{}') });
else if (verb === 'check') await check(at);
else {
  process.stderr.write(`unknown verb ${verb}\n`);
  process.exit(2);
}
