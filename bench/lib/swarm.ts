/**
 * A swarm of agents that ask each other questions and answer what is
 * addressed to them, driven the way an agent drives the tools: every tool
 * call here is one an LLM would make (and pay a turn for). Used by the
 * 20-agent swarm test (correctness) and by the bench (figures).
 *
 * Each agent keeps one question in flight: it asks (`kind: question`,
 * `to: <peer>`), then loops on wait_for_relay with its cursor, answering each
 * question addressed to it (`kind: answer`, `to: <asker>`, `parent: <q>`)
 * and noting each answer to its own question, until its questions are
 * answered and it has answered every question the plan sends it.
 *
 *   addressed    wait_for_relay {to: [me, "all"], after: cursor}: the hub decides what is for whom
 *   unfiltered   wait_for_relay {after: cursor}: every record wakes every agent, which reads the metadata itself
 */

export interface ToolCaller {
  call(name: string, args: Record<string, unknown>): Promise<{ structuredContent?: unknown; isError?: boolean; content?: unknown }>;
}

export type SwarmMode = 'addressed' | 'unfiltered';

export interface SwarmOptions {
  /** Questions each agent asks, one at a time. */
  questionsEach: number;
  mode: SwarmMode;
  /** The whole run fails past this. */
  deadlineMs: number;
  now: () => number;
  /**
   * How long an asker thinks between an answer and its next question (0:
   * ask at once). A model's turn takes seconds, so a real swarm has few
   * questions open at once; with none, all twenty are open all the time
   * and the figure is the machine's throughput, not a message's trip.
   * Each agent's first question comes at a random point within one think
   * time, so the swarm does not ask in lockstep.
   */
  thinkMs?: number;
  /** Where every agent's cursor starts (default: the corpus's start); a swarm run again on the same corpus passes the last run's `cursor`. */
  after?: string;
}

interface Item {
  id: string;
  kind: string | null;
  from: string | null;
  to: string | null;
  parent: string | null;
}

export interface SwarmReport {
  asked: number;
  answered: number;
  waits: number;
  /** Wait answers that carried no record for the agent that paid for them. */
  emptyWaits: number;
  /** Every tool call any agent made. */
  calls: number;
  /** Ask → the asker holds the answer, ms, one per answered question. */
  latencies: number[];
  /** The asker's calls for each answered question: the ask, and every wait it made while the question was open. */
  askerCalls: number[];
  /** Records a wait answer carried that its filter should have kept out (addressed mode), by agent. */
  leaks: { agent: string; id: string; to: string | null }[];
  /** Ids some agent received twice. */
  duplicates: { agent: string; id: string }[];
  /** The furthest cursor any agent ended on: past every record of the run. */
  cursor: string;
}

export const agentName = (i: number) => `agent-${String(i).padStart(2, '0')}`;

const recipients = (to: string | null) => (to ?? '').split(/[\s,]+/).filter(Boolean);

/** Whom agent `i` asks its q-th question: spread over all the others. */
export function peerOf(i: number, q: number, n: number): number {
  return (i + 1 + (q % (n - 1))) % n;
}

export async function runSwarm(agents: ToolCaller[], options: SwarmOptions): Promise<SwarmReport> {
  const n = agents.length;
  const start = options.after ?? 'relay-0000';
  const report: SwarmReport = { asked: 0, answered: 0, waits: 0, emptyWaits: 0, calls: 0, latencies: [], askerCalls: [], leaks: [], duplicates: [], cursor: start };
  const incoming = new Array<number>(n).fill(0);
  for (let i = 0; i < n; i++) for (let q = 0; q < options.questionsEach; q++) incoming[peerOf(i, q, n)]!++;
  const deadline = options.now() + options.deadlineMs;

  const call = async (agent: ToolCaller, name: string, args: Record<string, unknown>) => {
    report.calls++;
    const result = await agent.call(name, args);
    if (result.isError) throw new Error(`${name} refused: ${JSON.stringify(result.content)}`);
    return result.structuredContent as Record<string, unknown>;
  };

  const run = async (i: number) => {
    const me = agentName(i);
    const agent = agents[i]!;
    const askedAt = new Map<string, number>();
    const seen = new Set<string>();
    let asked = 0;
    let answeredMine = 0;
    let answeredTheirs = 0;
    let cursor = start;
    /** Waits made while this agent's current question is open (one question is open at a time). */
    let waitsWhileOpen = 0;
    const ask = async () => {
      waitsWhileOpen = 0;
      const peer = agentName(peerOf(i, asked, n));
      const t0 = options.now();
      const r = await call(agent, 'append_relay', { bytes: `@p-e/x0\nkind: question\nfrom: ${me}\nto: ${peer}\n\nquestion ${asked} from ${me}\n` });
      askedAt.set(r.id as string, t0);
      asked++;
      report.asked++;
    };
    const think = options.thinkMs ?? 0;
    let nextAskAt: number | null = null;
    if (think > 0) nextAskAt = options.now() + Math.random() * think;
    else await ask();
    while (answeredMine < options.questionsEach || answeredTheirs < incoming[i]!) {
      if (options.now() > deadline) throw new Error(`${me} ran out of time: ${answeredMine}/${options.questionsEach} answered, ${answeredTheirs}/${incoming[i]} answers given`);
      if (nextAskAt !== null && options.now() >= nextAskAt) {
        nextAskAt = null;
        await ask();
      }
      // A thinking asker waits at most until it asks again (a model would call again after its turn).
      const timeout = nextAskAt === null ? 5000 : Math.max(1, Math.ceil(nextAskAt - options.now()));
      const args: Record<string, unknown> = { after: cursor, timeout_ms: timeout };
      if (options.mode === 'addressed') args.to = [me, 'all'];
      const r = await call(agent, 'wait_for_relay', args);
      if (nextAskAt !== null && (r.appeared as Item[]).length === 0) {
        cursor = r.cursor as string;
        continue; // its own thinking time ran out: not a wait the agent paid a turn for
      }
      report.waits++;
      if (askedAt.size > 0) waitsWhileOpen++;
      const t = options.now();
      cursor = r.cursor as string;
      const items = r.appeared as Item[];
      if (options.mode === 'addressed') for (const item of items) if (!recipients(item.to).some((x) => x === me || x === 'all')) report.leaks.push({ agent: me, id: item.id, to: item.to });
      const mine = items.filter((item) => recipients(item.to).includes(me));
      if (mine.length === 0) report.emptyWaits++;
      for (const item of mine) {
        if (seen.has(item.id)) report.duplicates.push({ agent: me, id: item.id });
        seen.add(item.id);
        if (item.kind === 'answer' && item.parent && askedAt.has(item.parent)) {
          report.latencies.push(t - askedAt.get(item.parent)!);
          report.askerCalls.push(1 + waitsWhileOpen);
          askedAt.delete(item.parent);
          answeredMine++;
          report.answered++;
          if (asked < options.questionsEach) {
            if (think > 0) nextAskAt = t + think;
            else await ask();
          }
        } else if (item.kind === 'question') {
          await call(agent, 'append_relay', { bytes: `@p-e/x0\nkind: answer\nfrom: ${me}\nto: ${item.from}\nparent: ${item.id}\n\nanswer to ${item.id}\n` });
          answeredTheirs++;
        }
      }
    }
    if (cursor > report.cursor) report.cursor = cursor; // ids of one width compare as text
  };
  await Promise.all(agents.map((_, i) => run(i)));
  return report;
}
