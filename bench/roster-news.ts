/**
 * What roster news costs a named agent's wait (lib/mcp/tools/roster-news.ts):
 *
 *   A. 20 agents on the roster, each with an about; one restates its about:
 *      the bytes of roster news in each peer's next answer (its `agents`
 *      as JSON and its text line).
 *   B. ABOUTS about records for names not on the roster (an operator's
 *      `agents about`, or records a pull brought): CPU per wait of an
 *      agent on the roster, its roster news included, over 20 waits; and
 *      the wait right after one more such about lands (the abouts read again).
 *
 * Run it in two checkouts to compare them under the same load:
 *
 *   node --import tsx bench/roster-news.ts [ABOUTS] [CHECKOUT]   (default: 2000, this one)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ghosts = Number(process.argv[2] ?? 2000);
const root = path.resolve(process.argv[3] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
const load = async <T>(file: string) => (await import(pathToFileURL(path.join(root, file)).href)) as T;
interface Store {
  append(bytes: Uint8Array, options: { depositedBy: string; agent?: string }): Promise<{ id: string }>;
  agents: { roster: { seen(name: string, how: string): Promise<void> }; wait(agent: string, filter: null, options: { timeoutMs: number }): Promise<unknown> };
  close(): Promise<void>;
}
const { openStore } = await load<{ openStore(options: object): Promise<Store> }>('lib/store/store.ts');
const { rosterNews, rosterLine } = await load<{ rosterNews(store: Store, agent: string, now?: number): Promise<object[] | { agents: object[]; whole: boolean } | undefined>; rosterLine(agents: object[], whole?: boolean): string }>('lib/mcp/tools/roster-news.ts');
/** The agents a news answer carries, and its text line, from either shape of rosterNews (an array before it sent only what changed). */
const newsOf = (news: object[] | { agents: object[]; whole: boolean }) => (Array.isArray(news) ? { agents: news, line: rosterLine(news) } : { agents: news.agents, line: rosterLine(news.agents, news.whole) });

const about = (text: string) => Buffer.from(`@p-e/x0\nkind: about\n\n${text}\n`);
const settle = () => new Promise((resolve) => setTimeout(resolve, 1_200)); // past the coarsest mtime a cache trusts

async function partA(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pe-roster-news-a-'));
  const store = await openStore({ corpus: dir, watch: 'none' });
  const names = Array.from({ length: 20 }, (_, i) => `agent-${String(i).padStart(2, '0')}`);
  for (const name of names) {
    await store.agents.roster.seen(name, 'served');
    await store.append(about(`${name} reviews the store's append path and the roster's abouts, and answers questions on them.`), { depositedBy: `mcp/${name}`, agent: name });
  }
  await settle();
  for (const name of names) await rosterNews(store, name); // each told the roster once
  await store.append(about('agent-00 now reviews the bridge instead, and answers questions on it.'), { depositedBy: 'mcp/agent-00', agent: 'agent-00' });
  await settle();
  let bytes = 0;
  let listed = 0;
  let answers = 0;
  // A minute later: past the limit on how often one agent's about is news (a checkout without one ignores the clock).
  const later = Date.now() + 61_000;
  for (const name of names.slice(1)) {
    const news = await rosterNews(store, name, later);
    if (!news) continue;
    const { agents, line } = newsOf(news);
    answers++;
    listed += agents.length;
    bytes += Buffer.byteLength(JSON.stringify({ agents })) + Buffer.byteLength(line);
  }
  console.log(`A. 20 agents, one restates its about: ${answers} of 19 peer answers carry roster news, ${answers ? (listed / answers).toFixed(1) : 0} names and ${answers ? Math.round(bytes / answers) : 0} bytes each (JSON + text line)`);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

async function partB(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pe-roster-news-b-'));
  const store = await openStore({ corpus: dir, watch: 'none' });
  await store.agents.roster.seen('ana', 'served');
  for (let i = 0; i < ghosts; i++) await store.append(about(`ghost ${i} says it knows everything there is to know.`), { depositedBy: 'cli/op', agent: `ghost-${i}` });
  await settle();
  const waits = 20;
  await store.agents.wait('ana', null, { timeoutMs: 0 });
  await rosterNews(store, 'ana');
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for (let i = 0; i < waits; i++) {
    await store.agents.wait('ana', null, { timeoutMs: 0 });
    await rosterNews(store, 'ana');
  }
  const cpu = process.cpuUsage(cpu0);
  console.log(`B. ${ghosts} abouts of names not on the roster: ${((cpu.user + cpu.system) / waits / 1000).toFixed(2)} ms CPU, ${((performance.now() - wall0) / waits).toFixed(2)} ms wall per wait with its roster news`);
  // Each about that lands moves the about directory's mtime: the next wait reads the abouts again.
  let cold = 0;
  for (let i = 0; i < 5; i++) {
    await store.append(about('one more ghost.'), { depositedBy: 'cli/op', agent: `late-ghost-${i}` });
    const cpu1 = process.cpuUsage();
    await store.agents.wait('ana', null, { timeoutMs: 0 });
    await rosterNews(store, 'ana');
    const used = process.cpuUsage(cpu1);
    cold += used.user + used.system;
  }
  console.log(`B. the wait after one more such about lands: ${(cold / 5 / 1000).toFixed(2)} ms CPU (mean of 5)`);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

await partA();
await partB();
console.log(`load average ${loadavg().map((n) => n.toFixed(1)).join(' ')}`);
