/**
 * What one receipt costs (`deliveredTo` of a broadcast, as an unsigned
 * list_replies asks it) with MARKS marks on disk: 40 filter sets of `to:`
 * names per agent, in a temp directory; CPU and wall per receipt over 200.
 * Run it in two checkouts to compare them under the same load:
 *
 *   node --import tsx bench/mark-receipts.ts [MARKS] [CHECKOUT]   (default: 400, this one)
 *
 * The marks are measured twice: just written, and once they are older than
 * any clock tick (what an index that trusts an unchanged stamp can skip).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const total = Number(process.argv[2] ?? 400);
const root = path.resolve(process.argv[3] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
const load = async <T>(file: string) => (await import(pathToFileURL(path.join(root, file)).href)) as T;
const { AgentDeliveries } = await load<{ AgentDeliveries: new (feed: unknown, dirs: object, log: unknown) => Receipts }>('lib/store/agents/deliveries.ts');
const { idShape } = await load<{ idShape: (width: number) => { parse(id: string): number | null } }>('lib/model/ids.ts');
const { silentLogger } = await load<{ silentLogger: unknown }>('lib/log.ts');
interface Receipts {
  marks: { deliverThrough(agent: string, filter: object, through: number): Promise<unknown> };
  deliveredTo(n: number, to: string, from: string): Promise<string[] | null>;
}

const dir = mkdtempSync(path.join(tmpdir(), 'pe-mark-receipts-'));
const shape = idShape(4);
const feed = { shape, head: 10, ready: Promise.resolve(), state: 'open', wait: () => Promise.reject(new Error('unused')), eachHeldAfter: () => [], markOf: async (id: string) => shape.parse(id) };
const deliveries = new AgentDeliveries(feed, { marks: path.join(dir, 'marks'), roster: path.join(dir, 'roster') }, silentLogger);
for (let i = 0; i < total; i++) {
  const agent = `agent-${Math.floor(i / 40)}`;
  await deliveries.marks.deliverThrough(agent, { to: new Set([agent, 'all', `x${i}`]) }, 12);
}

/**
 * Record 11, a broadcast every mark passed (found at each agent's first
 * mark), record 3, one from before every mark's start, and record 13, one no
 * mark has reached yet (every mark looked at: the costly answer).
 */
async function measure(label: string): Promise<void> {
  for (const [n, what] of [[11, 'delivered'], [3, 'from before the start'], [13, 'not delivered yet']] as const) {
    const calls = 200;
    await deliveries.deliveredTo(n, 'all', 'ana');
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    for (let i = 0; i < calls; i++) await deliveries.deliveredTo(n, 'all', 'ana');
    const cpu = process.cpuUsage(cpu0);
    console.log(`${total} marks, ${label}, a broadcast ${what}: ${((cpu.user + cpu.system) / calls / 1000).toFixed(3)} ms CPU, ${((performance.now() - wall0) / calls).toFixed(3)} ms wall per receipt`);
  }
}
await measure('just written');
await new Promise((resolve) => setTimeout(resolve, 1_200));
await measure('settled');
console.log(`load average ${loadavg().map((n) => n.toFixed(1)).join(' ')}`);
rmSync(dir, { recursive: true, force: true });
