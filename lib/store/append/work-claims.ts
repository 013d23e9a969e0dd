/**
 * Work claims decided beside exactly-once (spec §8e): a claim is stored
 * only if none of its targets collides with another agent's live claim,
 * and a release or done only from the claim's holder.
 *
 * Exactly one of two colliding claims is stored, from any processes or
 * hosts on the corpus, because every decision is taken holding one lock
 * file under .state/ (the same O_EXCL lock marks and abouts use,
 * agents/file-lock.ts): the holder first hears what peers published
 * (their issued lines, as the link does), decides from the records the
 * index then holds, and publishes before it lets go. Plain appends never
 * take the lock.
 *
 * The records are the truth: live claims are derived from the claim,
 * release and done records held, never kept apart. A claim that arrived
 * by rsync or git was never decided here; it counts like any other once it
 * is heard, and its holder is the agent its deposit names (else its
 * from:). A release or done counts when its holder is the claim's, or it
 * was deposited by a local operator (cli/USER). A claim is live from its
 * deposited-at for its for: life, until one counts.
 *
 * What the records say is read once per process and kept: a claim record
 * never changes. Each decision looks only at records added since the last
 * (unless something was added below them or vanished: then all again).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isRelayError, RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { depositingAgent } from '../../model/agent-name.js';
import type { RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordClaims } from '../../model/record.js';
import type { RecordIndex, RecordMeta } from '../../model/record-index.js';
import {
  CLAIM_KIND,
  DONE_KIND,
  MAX_LIVE_CLAIMS_PER_AGENT,
  RELEASE_KIND,
  claimRole,
  literalStart,
  pathsCollide,
  targetsCollide,
  targetText,
  workClaimOf,
  type ClaimTarget,
  type WorkClaimText,
} from '../../model/work-claims.js';
import { withFileLock } from '../agents/file-lock.js';
import type { RecordBytes } from '../follow/subscription.js';
import type { Peers } from '../hear/peers.js';
import type { AppendOptions, AppendResult } from '../store-options.js';

/** A live claim as every door shows it. */
export interface LiveWorkClaim {
  id: string;
  holder: string;
  /** Each as the claim: header wrote it, `task:ID` or `path:PATTERN`. */
  targets: string[];
  depositedAt: string;
  lapsesAt: string;
}

export interface WorkClaimParts {
  index: RecordIndex;
  shape: IdShape;
  /** Looks past the issued log's top too: a record copied in by rsync or git has no line. */
  peers: Pick<Peers, 'lookPast'>;
  /** Waits for peers' records still being read until whole. */
  settled: () => Promise<void>;
  /** The read wing's, handed over by wings.ts (a wing does not import a later one). */
  reads: { read(id: string): Promise<RecordBytes> };
  /** The file whose lock serializes decisions (.state/work-claims). */
  lockFile: string;
  log: Logger;
}

/** What an append is, as claims see it: checked before the store opens. */
export type WorkClaimAppend =
  | { role: 'claim'; agent: string; claim: WorkClaimText }
  | { role: 'end'; kind: string; agent: string | null; parent: number };

interface ClaimFacts {
  n: number;
  holder: string;
  targets: ClaimTarget[];
  depositedAtMs: number;
  lapsesMs: number;
  /** The counting release or done that ended it, if any. */
  endedBy: { n: number; done: boolean } | null;
}

interface EndFacts {
  n: number;
  done: boolean;
  holder: string | null;
  operator: boolean;
}

/** Why a claim's record holds no claim for good: it says none (bad_claim), its bytes are damaged, or its file is gone. Anything else is read again. */
const GONE_OR_NO_CLAIM = new Set(['bad_claim', 'damaged', 'not_found']);

const FAMILY: RecordFilter = { kind: new Set([CLAIM_KIND, RELEASE_KIND, DONE_KIND]) };

/**
 * What an append means for claims, or undefined for any other record.
 * Refused agent_required where a claim (or a release or done not from a
 * local operator) comes through a channel that names no agent, and
 * bad_claim where it says what a claim cannot.
 */
export function workClaimAppend(claims: RecordClaims, bytes: Uint8Array, options: AppendOptions): WorkClaimAppend | undefined {
  const role = claimRole(claims.kind);
  if (role === null) return undefined;
  const agent = options.agent ?? null;
  if (role === 'claim') {
    if (agent === null) throw agentRequired('claim');
    return { role, agent, claim: workClaimOf(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) };
  }
  if (agent === null && !isOperator(options.depositedBy)) throw agentRequired(claims.kind!);
  if (claims.parent === null) {
    throw new RelayError('bad_claim', `A ${claims.kind} ends a claim and needs parent: the claim's id (e.g. parent: relay-0042). To say something else, use another kind.`);
  }
  return { role, kind: claims.kind!, agent, parent: claims.parent };
}

function agentRequired(kind: string): RelayError {
  return new RelayError('agent_required', `A ${kind} needs a named agent, since a claim has a holder, and this channel names none; nothing was stored. ` +
    `Start the server with serve --agent NAME (or P_E_RELAY_AGENT=NAME); over HTTP, sign the call.`, { reason: 'claim' });
}

function isOperator(depositedBy: string): boolean {
  return depositedBy.startsWith('cli/');
}

export class WorkClaimBook {
  private readonly claims = new Map<number, ClaimFacts>();
  /** Ends heard before their claim (a fill-in, a copy in another order), by the claim's id. */
  private readonly ends = new Map<number, EndFacts[]>();
  /** Claims that may still be live: not ended; dropped once lapsed. */
  private readonly open = new Set<number>();
  /** Claims that may be live, by task id, by holder, and those with paths (each path with its literal start): a claim is compared only with these. */
  private readonly byTask = new Map<string, number[]>();
  private readonly byHolder = new Map<string, Set<number>>();
  private readonly byPath: { n: number; pattern: string; literal: string }[] = [];
  /** Task ids a done closed, and the done's id. */
  private readonly doneTasks = new Map<string, number>();
  /** Family records already taken in, and where the last look stopped. */
  private readonly seen = new Set<number>();
  private lookedUpTo = 0;
  private prunedAt = 0;
  private catching: Promise<void> = Promise.resolve();
  /** Family records a look could not read (a busy machine's EMFILE, say): read first at the next look. */
  private unread: number[] = [];
  private sizeThen = 0;

  constructor(private readonly parts: WorkClaimParts) {}

  /** Decides a claim, release or done holding the lock, and stores it with `store` if it may be. */
  async decide(append: WorkClaimAppend, store: () => Promise<AppendResult>): Promise<AppendResult> {
    // Most of what is new is read before the lock, so the lock is held for milliseconds (a lock held past STALE_MS is taken over).
    this.parts.peers.lookPast();
    await this.catchUp();
    await mkdir(path.dirname(this.parts.lockFile), { recursive: true }); // a .state/ removed while the server runs is made again, as its other files are
    return withFileLock(this.parts.lockFile, async () => {
      this.parts.peers.lookPast();
      await this.parts.settled();
      await this.catchUp();
      const now = Date.now();
      if (append.role === 'claim') this.checkClaim(append.agent, append.claim.targets, now, true);
      else await this.checkEnd(append, now);
      return store();
    }, (why) => new RelayError('internal', `Work claims cannot be decided: ${why}. Ask the operator to remove it.`));
  }

  /**
   * A claim answered as replayed (its bytes were its key, spec §8d) that is
   * no longer live would read as granted: refused instead, saying how to
   * claim anew.
   */
  async checkReplayed(id: string): Promise<void> {
    if ((await this.live()).some((c) => c.id === id)) return;
    throw new RelayError('bad_claim', `These exact bytes were stored before as ${id}, a claim that has lapsed or ended, so they claim nothing now; ` +
      `nothing was stored. Send the claim again with other bytes (another body or for:) to claim anew.`, { claim: id });
  }

  /** Every live claim now, oldest first. Takes no lock: what is heard now. */
  async live(now = Date.now()): Promise<LiveWorkClaim[]> {
    this.parts.peers.lookPast();
    await this.catchUp();
    return this.liveFacts(now).map((c) => this.shown(c));
  }

  private shown(c: ClaimFacts): LiveWorkClaim {
    return {
      id: this.parts.shape.format(c.n),
      holder: c.holder,
      targets: c.targets.map(targetText),
      depositedAt: new Date(c.depositedAtMs).toISOString(),
      lapsesAt: new Date(c.lapsesMs).toISOString(),
    };
  }

  /** Forgets, in the lookups, claims that are no longer live: at most once a second, as a claim lapses only with time. */
  private prune(now: number): void {
    if (now - this.prunedAt < 1000) return;
    this.prunedAt = now;
    const gone = (n: number) => {
      const c = this.claims.get(n)!;
      return c.lapsesMs <= now || c.endedBy !== null;
    };
    for (const [task, ns] of this.byTask) {
      const kept = ns.filter((n) => !gone(n));
      if (kept.length === 0) this.byTask.delete(task);
      else if (kept.length !== ns.length) this.byTask.set(task, kept);
    }
    for (const [holder, ns] of this.byHolder) {
      for (const n of ns) if (gone(n)) ns.delete(n);
      if (ns.size === 0) this.byHolder.delete(holder);
    }
    const kept = this.byPath.filter((p) => !gone(p.n));
    this.byPath.length = 0;
    for (const p of kept) this.byPath.push(p);
  }

  private liveFacts(now: number): ClaimFacts[] {
    const out: ClaimFacts[] = [];
    for (const n of [...this.open].sort((a, b) => a - b)) {
      const c = this.claims.get(n)!;
      if (c.lapsesMs <= now || c.endedBy) this.open.delete(n);
      else out.push(c);
    }
    return out;
  }

  /** Refuses targets a done closed or another agent holds; with `capped`, also an agent at its cap. */
  private checkClaim(agent: string, targets: ClaimTarget[], now: number, capped: boolean): void {
    const { shape } = this.parts;
    this.prune(now);
    for (const t of targets) {
      if (t.type !== 'task') continue;
      const closer = this.doneTasks.get(t.id);
      if (closer !== undefined) {
        throw new RelayError('done', `The task ${t.id} was closed for good by ${shape.format(closer)} (kind: done); nothing was stored. ` +
          `Read it with get_relay, and claim another task.`, { target: targetText(t), closedBy: shape.format(closer) });
      }
    }
    const collisions: { target: string; holder: string; claim: string; heldTarget: string; lapsesAt: string }[] = [];
    const isLive = (c: ClaimFacts) => c.lapsesMs > now && !c.endedBy;
    for (const t of targets) {
      const literal = t.type === 'path' ? literalStart(t.pattern) : '';
      const near = t.type === 'task'
        ? (this.byTask.get(t.id) ?? [])
        : this.byPath.filter((p) => (p.literal.startsWith(literal) || literal.startsWith(p.literal)) && pathsCollide(p.pattern, t.pattern)).map((p) => p.n);
      for (const n of new Set(near)) {
        const c = this.claims.get(n)!;
        if (c.holder === agent || !isLive(c)) continue;
        const held = c.targets.find((h) => targetsCollide(t, h))!;
        collisions.push({ target: targetText(t), holder: c.holder, claim: shape.format(c.n), heldTarget: targetText(held), lapsesAt: new Date(c.lapsesMs).toISOString() });
      }
    }
    if (collisions.length > 0) throw claimedRefusal(collisions);
    let mine = 0;
    for (const n of this.byHolder.get(agent) ?? []) if (isLive(this.claims.get(n)!)) mine++;
    if (capped && mine >= MAX_LIVE_CLAIMS_PER_AGENT) {
      throw new RelayError('bad_claim', `${agent} holds ${mine} live claims, the most one agent may hold; nothing was stored. Release or finish some ` +
        `(kind: release or done, parent: the claim), or claim a directory instead of many files.`, { limit: MAX_LIVE_CLAIMS_PER_AGENT });
    }
  }

  private async checkEnd(append: Extract<WorkClaimAppend, { role: 'end' }>, now: number): Promise<void> {
    const { index, shape } = this.parts;
    const id = shape.format(append.parent);
    const meta = index.get(append.parent)?.meta;
    if (meta?.kind !== CLAIM_KIND) {
      const what = meta ? `a ${meta.kind === null ? 'record without kind:' : `kind: ${meta.kind}`} record` : index.has(append.parent) ? 'a damaged record' : 'not held here';
      throw new RelayError('bad_claim', `A ${append.kind} ends a claim, and its parent ${id} is ${what}, not a claim; nothing was stored. ` +
        `Name the claim's id in parent:, or use another kind.`, { parent: id });
    }
    const claim = this.claims.get(append.parent);
    if (!claim) throw new RelayError('bad_claim', `${id} is a claim whose claim: or for: this store cannot read, so it holds nothing to end; nothing was stored.`, { parent: id });
    if (append.agent !== null && append.agent !== claim.holder) {
      throw new RelayError('not_holder', `${id} is held by ${claim.holder}, not ${append.agent}; only its holder ends it, and nothing was stored. ` +
        `Wait for its replies (wait_for_relay replies_to ${id}) or for it to lapse at ${new Date(claim.lapsesMs).toISOString()}.`, { holder: claim.holder, claim: id });
    }
    // A done after the claim lapsed still closes its tasks, unless another agent holds one of them now.
    if (append.kind === DONE_KIND && (claim.lapsesMs <= now || claim.endedBy)) this.checkClaim(claim.holder, claim.targets.filter((t) => t.type === 'task'), now, false);
  }

  /**
   * Takes in the family records the index holds that were not taken in yet.
   * One at a time: a look that found a record and is still reading it must
   * not let another look pass it by as seen.
   */
  private catchUp(): Promise<void> {
    const run = this.catching.then(() => this.catchUpNow());
    this.catching = run.catch(() => {});
    return run;
  }

  private async catchUpNow(): Promise<void> {
    const { index } = this.parts;
    const newer = index.presentAfter(this.lookedUpTo).length;
    if (index.size !== this.sizeThen + newer) this.reset(); // a fill-in below, or a file gone
    const ids = [...this.unread, ...index.matchingAfter(this.lookedUpTo, FAMILY)];
    this.unread = [];
    this.lookedUpTo = index.highestHeld();
    this.sizeThen = index.size;
    for (const [at, n] of ids.entries()) {
      if (this.seen.has(n)) continue;
      const meta = index.get(n)?.meta;
      try {
        if (meta) await this.takeIn(n, meta);
      } catch (err) {
        // Not read now is not no claim: read it (and what follows) again next time, and decide nothing until then.
        this.unread = ids.slice(at);
        throw new RelayError('internal', `Work claims cannot be decided now: ${meta!.id} could not be read (${(err as Error).message}); ` +
          `nothing was stored. Send the same record again in a moment.`, { unread: meta!.id });
      }
      this.seen.add(n);
    }
  }

  private reset(): void {
    for (const part of [this.claims, this.ends, this.doneTasks, this.byTask, this.byHolder]) part.clear();
    this.open.clear();
    this.byPath.length = 0;
    this.seen.clear();
    this.unread = [];
    this.lookedUpTo = 0;
    this.sizeThen = 0;
  }

  private async takeIn(n: number, meta: RecordMeta): Promise<void> {
    const holder = depositingAgent(meta.depositedBy, meta.agent) ?? meta.from;
    if (meta.kind === CLAIM_KIND) {
      if (holder === null) return; // no one's: it holds nothing
      let text: WorkClaimText;
      try {
        text = workClaimOf((await this.parts.reads.read(meta.id)).record.toString('utf8'));
      } catch (err) {
        if (!isRelayError(err) || !GONE_OR_NO_CLAIM.has(err.code)) throw err;
        this.parts.log.debug(`${meta.id} holds no claim: ${err.message}`);
        return;
      }
      const at = Date.parse(meta.depositedAt);
      if (!Number.isFinite(at)) {
        // A copy whose deposit header was written by hand: its life has no start, so it holds nothing (and shows no "Invalid Date").
        this.parts.log.debug(`${meta.id} holds no claim: its deposited-at ${JSON.stringify(meta.depositedAt.slice(0, 40))} is not a time`);
        return;
      }
      const claim: ClaimFacts = { n, holder, targets: text.targets, depositedAtMs: at, lapsesMs: at + text.lifeMs, endedBy: null };
      this.claims.set(n, claim);
      this.open.add(n);
      this.byHolder.set(holder, (this.byHolder.get(holder) ?? new Set()).add(n));
      for (const t of text.targets) {
        if (t.type === 'task') this.byTask.set(t.id, [...(this.byTask.get(t.id) ?? []), n]);
        else this.byPath.push({ n, pattern: t.pattern, literal: literalStart(t.pattern) });
      }
      for (const end of this.ends.get(n) ?? []) this.apply(claim, end);
      this.ends.delete(n);
      return;
    }
    const parent = meta.parent === null ? null : this.parts.shape.parseRecordId(meta.parent);
    if (parent === null) return;
    const end: EndFacts = { n, done: meta.kind === DONE_KIND, holder, operator: isOperator(meta.depositedBy) };
    const claim = this.claims.get(parent);
    if (claim) this.apply(claim, end);
    else this.ends.set(parent, [...(this.ends.get(parent) ?? []), end]);
  }

  private apply(claim: ClaimFacts, end: EndFacts): void {
    if (!end.operator && end.holder !== claim.holder) return; // a copy's end from someone else: never decided here, and it ends nothing
    if (!claim.endedBy || end.n < claim.endedBy.n) claim.endedBy = { n: end.n, done: end.done };
    if (!end.done) return;
    for (const t of claim.targets) {
      if (t.type !== 'task') continue;
      const was = this.doneTasks.get(t.id);
      if (was === undefined || end.n < was) this.doneTasks.set(t.id, end.n);
    }
  }
}

function claimedRefusal(collisions: { target: string; holder: string; claim: string; heldTarget: string; lapsesAt: string }[]): RelayError {
  const each = collisions
    .slice(0, 8)
    .map((c) => `${c.target} collides with ${c.heldTarget} held by ${c.holder} (${c.claim}, lapses ${c.lapsesAt})`)
    .join('; ');
  const more = collisions.length > 8 ? `; and ${collisions.length - 8} more` : '';
  return new RelayError('claimed', `Claimed by another agent, so nothing was stored: ${each}${more}. Pick other work, or wait for the claim's ` +
    `replies (wait_for_relay replies_to ${collisions[0]!.claim}): a release or done ends it, or it lapses.`, { collisions: collisions.slice(0, 32) });
}
