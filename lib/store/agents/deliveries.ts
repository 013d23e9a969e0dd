/**
 * Delivery to a named agent (spec §8d): what the relay keeps so the model
 * does not have to. A wait from a named agent with no `after` goes on from
 * the agent's mark for its filter set (marks.ts), and answers what is
 * addressed to it (by default `to:` its name or `all`), not its own, not yet
 * delivered.
 *
 * When a delivery counts. An answer written to the client is only pending:
 * it counts once the agent shows it got it, by its next call in the same
 * session (`seen`): on this server, and, where one process serves many
 * sessions of an agent (a hub, each bridge a session), from the session the
 * answer went to. A bridge names its session in every call (model/session.ts); a
 * call that names none is its agent's one unnamed session here (a client
 * signing directly), which proves only what unnamed calls were given. So a
 * bridge that ends between an answer and its next call leaves that answer
 * pending for good, and the agent's next session has it again, as a new
 * stdio server does. A server that ends before that proof (killed, told to stop, or
 * its client gone) has written nothing for it, so the next one answers the
 * same records once more: at least once, never fewer. A clean close is no
 * proof: a client may close its end without having read the last answer,
 * and a host that ends a session takes the model's turn with it. `inbox`
 * and pushes count at once (the hook has printed it, the notification was
 * written).
 *
 * Several servers of one agent at once share its marks on disk, and each
 * keeps its own pending answers: two sessions waiting at the same moment may
 * each be given the same record (each session sees it once), and a mark
 * never moves back, whichever proves first.
 */
import { BROADCAST, depositingAgent } from '../../model/agent-name.js';
import { parseRecipients, type RecordFilter } from '../../model/filter.js';
import type { Logger } from '../../log.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordMeta } from '../../model/record-index.js';
import type { HeldRecord } from '../follow/subscription.js';
import { WAIT_MAX_ITEMS, type WaitResult } from '../follow/waiters.js';
import type { WaitOptions } from '../store-options.js';
import { filterKey } from './filter-key.js';
import type { Mark } from './mark-file.js';
import { AgentMarks } from './marks.js';
import { Roster, type KnownBy } from './roster.js';

/** What deliveries need of a store: its waits, its catch-up, the newest id it holds, its check of a mark. */
export interface DeliveryFeed {
  readonly shape: IdShape;
  readonly head: number;
  readonly ready: Promise<void>;
  /** 'open' once the start-up scan is done (store-lifecycle's states). */
  readonly state: string;
  wait(options: WaitOptions): Promise<WaitResult & { cursor: string }>;
  eachHeldAfter(mark: number, filter?: RecordFilter | null): Iterable<HeldRecord>;
  /** An `after` mark checked against the store (a saved mark ahead of it is refused). */
  markOf(after: string): Promise<number>;
}

interface Pending {
  agent: string;
  /** The session it was answered to ('' for calls that name none). */
  session: string;
  filter: RecordFilter;
  through: number;
}

/**
 * Sessions of one agent with answers awaiting proof, held here: past this, the
 * oldest is forgotten (its answers come again, never fewer). A session that
 * ended before its proof is never heard from again; this bounds what it leaves.
 */
export const MAX_PENDING_SESSIONS = 64;

export class AgentDeliveries {
  readonly marks: AgentMarks;
  readonly roster: Roster;
  /** Answers written and not yet proved, by agent, session and filter key (in the order they were first given). */
  private readonly pending = new Map<string, Pending>();
  /**
   * Ids pushed in this process, by agent and filter key, noted the moment
   * deliver() is called: a wait already blocked read its mark before, and
   * must not hand out what a push just delivered.
   */
  private readonly pushed = new Map<string, Set<number>>();
  /** Agents whose first start is noted (marks.begin). */
  private readonly begun = new Set<string>();
  /** Starts being noted from when the relay came to know the name (known): a first call waits for them, not to note a later one. */
  private readonly knowing = new Map<string, Promise<void>>();
  /** Records a push is writing and has not yet delivered, by agent (claim). */
  private readonly claimed = new Map<string, Set<number>>();

  constructor(
    private readonly store: DeliveryFeed,
    dirs: { marks: string; roster: string },
    private readonly log: Logger,
  ) {
    this.marks = new AgentMarks(dirs.marks, store.shape, () => store.head, log, (n) => store.markOf(store.shape.format(n)));
    this.roster = new Roster(dirs.roster, log);
  }

  /**
   * The `to:` names of a record that no one on the roster has (never `all`,
   * and never `parentAuthor`: a reply to the from: of the record it answers
   * is addressed right even when that author wrote through the CLI and so
   * never served, signed or had a key).
   */
  async unknownRecipients(to: string | null, parentAuthor: string | null = null): Promise<string[]> {
    const unknown: string[] = [];
    for (const name of parseRecipients(to)) {
      if (name !== BROADCAST && name !== parentAuthor && !(await this.roster.has(name))) unknown.push(name);
    }
    return unknown;
  }

  /** What a named agent waits for when its call gives no filter: records to: it or to: all. */
  defaultFilter(agent: string): RecordFilter {
    return { to: new Set([agent, BROADCAST]) };
  }

  /**
   * The relay knows this name from now (a key on the hub, a named stdio
   * server started): a broadcast that lands from here on reaches it, even if
   * its first call comes later. `at` is the store's head when the name came
   * to be known (taken as the store opened, before any append could land);
   * an agent whose start is noted already keeps it. A failure is logged: its
   * first call notes it then.
   */
  known(agent: string, at: number): Promise<void> {
    if (this.begun.has(agent)) return Promise.resolve();
    const noting = this.knowing.get(agent) ?? this.marks.begin(agent, at).then(
      () => void this.begun.add(agent),
      (err: unknown) => this.log.warn(`cannot note where ${agent} started: ${(err as Error).message}; its first call notes it`),
    ).finally(() => this.knowing.delete(agent));
    this.knowing.set(agent, noting);
    return noting;
  }

  /**
   * The agent's next call in `session` arrived ('' for a call that names
   * none): every answer this process gave that session before now has
   * reached it. Its marks move there before the call runs (so a wait
   * goes on after them).
   */
  async seen(agent: string, how: KnownBy = 'served', session = ''): Promise<void> {
    await this.roster.seen(agent, how);
    // The agent's first call fixes where the broadcasts of its marks begin (marks.ts), whichever set it uses first, and when:
    // at once on an open store; else once the scan this call is about to start is done (a call that needs no index is not held up for it).
    await this.knowing.get(agent);
    if (!this.begun.has(agent)) {
      const begin = this.store.ready.then(() => this.marks.begin(agent)).then(
        () => void this.begun.add(agent),
        (err: unknown) => this.log.warn(`cannot note where ${agent} started: ${(err as Error).message}; its first mark notes it`),
      );
      if (this.store.state === 'open') await begin;
    }
    const mine = [...this.pending].filter(([, p]) => p.agent === agent && p.session === session);
    for (const [key] of mine) this.pending.delete(key);
    // A mark that cannot be moved (a file there that is no mark) fails no call of this one: that set's records come again.
    for (const [, p] of mine) {
      await this.marks.deliverThrough(agent, p.filter, p.through).catch((err: unknown) => this.log.warn(`cannot move ${agent}'s mark: ${(err as Error).message}; what it was given comes again`));
    }
  }

  /**
   * A wait from the agent without after: from its mark for this filter set
   * (the default set when `filter` is null), what it has not been given.
   * The answer's cursor is pending until the agent's next call.
   */
  async wait(agent: string, filter: RecordFilter | null, options: Omit<WaitOptions, 'after' | 'filter' | 'match'>, session = ''): Promise<WaitResult & { cursor: string }> {
    const set = filter ?? this.defaultFilter(agent);
    await this.store.ready;
    const mark = await this.marks.read(agent, set);
    const key = this.keyOf(agent, set);
    const pendingKey = `${session}\n${key}`;
    const ended = this.roster.waitStarted(agent);
    let result: WaitResult & { cursor: string };
    try {
      result = await this.store.wait({ ...options, after: this.store.shape.format(mark.after), filter: set, match: this.test(agent, key, mark) });
    } finally {
      ended();
    }
    const through = this.store.shape.parse(result.cursor) ?? mark.after;
    const before = this.pending.get(pendingKey);
    if (through > mark.after && (!before || through > before.through)) {
      this.pending.set(pendingKey, { agent, session, filter: set, through });
      if (!before) this.forgetOldSessions(agent);
    }
    return result;
  }

  /** Keeps at most MAX_PENDING_SESSIONS sessions of the agent pending, forgetting the first given. */
  private forgetOldSessions(agent: string): void {
    const sessions = new Set<string>();
    for (const p of this.pending.values()) if (p.agent === agent) sessions.add(p.session);
    if (sessions.size <= MAX_PENDING_SESSIONS) return;
    const oldest = [...sessions].slice(0, sessions.size - MAX_PENDING_SESSIONS);
    for (const [k, p] of this.pending) if (p.agent === agent && oldest.includes(p.session)) this.pending.delete(k);
  }

  /** The records the agent's mark for this set (null: the default set) has not delivered, ascending, at most `limit`. */
  async undelivered(agent: string, filter: RecordFilter | null = null, limit = WAIT_MAX_ITEMS): Promise<RecordMeta[]> {
    const set = filter ?? this.defaultFilter(agent);
    await this.store.ready;
    const mark = await this.marks.read(agent, set);
    const test = this.test(agent, this.keyOf(agent, set), mark);
    const out: RecordMeta[] = [];
    for (const { n, meta } of this.store.eachHeldAfter(mark.after, set)) {
      if (out.length >= limit) break;
      if (test(meta, n)) out.push(meta);
    }
    return out;
  }

  /**
   * The live test for a subscription (a push): the same as undelivered's, for
   * the mark as it is now, less what a wait in this process has already given
   * the agent and is still awaiting proof of (up to its cursor): pushing
   * those too would say them twice.
   */
  async matcher(agent: string, filter: RecordFilter | null = null): Promise<(meta: RecordMeta, n: number) => boolean> {
    const set = filter ?? this.defaultFilter(agent);
    const key = this.keyOf(agent, set);
    const test = this.test(agent, key, await this.marks.read(agent, set));
    let given = 0;
    for (const [k, p] of this.pending) if (k.endsWith(`\n${key}`) && p.agent === agent && p.through > given) given = p.through;
    return (meta, n) => n > given && test(meta, n);
  }

  /**
   * A push is about to write these records: until `deliver` has noted them
   * (`pushed`), a wait or push in this process leaves them out, so a wait
   * answered while the notification is being written cannot give them too.
   * Held in memory only: a server killed before `deliver` gives them again
   * after its restart (at least once). Returns the release.
   */
  claim(agent: string, ids: string[]): () => void {
    const mine = this.claimed.get(agent) ?? new Set<number>();
    this.claimed.set(agent, mine);
    const ns = ids.map((id) => this.store.shape.parse(id)).filter((n): n is number => n !== null);
    for (const n of ns) mine.add(n);
    return () => {
      for (const n of ns) mine.delete(n);
      if (mine.size === 0) this.claimed.delete(agent);
    };
  }

  /**
   * Counts these records as delivered to the agent for this set (a push),
   * durably before it resolves. Waits and pushes in this process see it at
   * once, before the write.
   */
  async deliver(agent: string, filter: RecordFilter | null, ids: string[]): Promise<void> {
    const set = filter ?? this.defaultFilter(agent);
    const ns = ids.map((id) => this.store.shape.parse(id)).filter((n): n is number => n !== null);
    const key = this.keyOf(agent, set);
    let pushed = this.pushed.get(key);
    if (!pushed) this.pushed.set(key, (pushed = new Set()));
    for (const n of ns) pushed.add(n);
    const mark = await this.marks.deliverIds(agent, set, ns);
    // What the mark has passed need not be remembered here any more.
    for (const n of pushed) if (n <= mark.after) pushed.delete(n);
  }

  private keyOf(agent: string, set: RecordFilter): string {
    return `${agent}\n${filterKey(set, this.store.shape)}`;
  }

  /** undelivered(), and not pushed by this process since the mark was read. */
  private test(agent: string, key: string, mark: Mark): (meta: RecordMeta, n: number) => boolean {
    const fresh = undelivered(agent, mark);
    return (meta, n) => fresh(meta, n) && !this.pushed.get(key)?.has(n) && !this.claimed.get(agent)?.has(n);
  }

  /**
   * Receipts (spec §8d): which agents a record was delivered to, from their
   * marks. The recipients are the agents its to: names, and for a to: all
   * every agent with marks here. A delivery counts once proved (a mark on
   * disk past it), not while an answer is pending. Null when none of them
   * has marks at all (no named agent is there to ask), so an unnamed swarm's
   * answers carry no receipts.
   */
  async deliveredTo(n: number, to: string | null, from: string | null): Promise<string[] | null> {
    const named = parseRecipients(to);
    const withMarks = new Set(await this.marks.agents());
    const recipients = named.includes(BROADCAST) ? [...withMarks] : named.filter((name) => withMarks.has(name));
    if (recipients.length === 0) return named.some((name) => name !== BROADCAST) && withMarks.size > 0 ? [] : null;
    const out: string[] = [];
    for (const agent of recipients.sort()) {
      if (agent === from) continue;
      if (await this.marks.covers(agent, n, named)) out.push(agent);
    }
    return out;
  }
}

/**
 * Whether a record is one to give the agent from this mark: above it, not
 * delivered one by one, not the agent's own (its from:, or deposited by it),
 * and, at or below where the mark began for broadcasts, naming the agent.
 */
export function undelivered(agent: string, mark: Mark): (meta: RecordMeta, n: number) => boolean {
  const delivered = new Set(mark.delivered);
  return (meta, n) =>
    n > mark.after &&
    !delivered.has(n) &&
    meta.from !== agent &&
    depositingAgent(meta.depositedBy, meta.agent) !== agent &&
    (n > mark.namedOnlyThrough || parseRecipients(meta.to).includes(agent));
}
