/**
 * What a serving process can say about its checkpoints from its index,
 * without reading every record (`verify` does that, and checks signatures):
 *
 * - `behindNewest`: the records the newest checkpoint held here lists that
 *   are not held here. On a read-only replica that is "behind": the primary
 *   had them when it wrote the checkpoint, and the next sync brings them.
 *   A wait that found nothing says so instead of "nothing new".
 * - `CheckpointFrontier`: the verified frontier (the web view shows it):
 *   every checkpoint from the first, in order, follows the one before, and
 *   every record it lists is held with that digest and hashes to its chain.
 *   The index's digests are the files' own (checked when each was indexed).
 *   Walked once, then only the checkpoints that landed since.
 */
import { splitRecordFile } from '../model/deposit.js';
import { chainOf, CHECKPOINT_FILTER, GENESIS_CHAIN, isCheckpoint, parseCheckpoint, type Checkpoint, type CheckpointEntry } from '../model/checkpoint.js';
import type { RelayStore } from './store.js';

/** How many not-held ids a "behind" names; the count says the rest. */
const NAMED_AT_MOST = 10;

export interface Behind {
  checkpoint: string;
  /** How many records the checkpoint lists that are not held here, and the first few of them. */
  count: number;
  ids: string[];
}

/**
 * The hub's checkpoints held, by id, kept as the index holds them: each
 * record of kind checkpoint is looked at once, by who deposited it, so any
 * number of agents' `kind: checkpoint` records costs one look each and
 * never hides the hub's. The first look goes back from the newest, twice as
 * far each round, until it meets one of the hub's (a cron job's fresh
 * process does not walk a million records to find the last thousand's);
 * later ones go forward from where it stopped, as far as is visible (a
 * cursor's rule: nothing below it is indexed later), so none is passed over.
 */
class HubCheckpoints {
  private ids: number[] = [];
  /** The newest record of kind checkpoint looked at; null before the first look. */
  private walked: number | null = null;

  constructor(private readonly store: RelayStore) {}

  newest(): number | null {
    if (this.walked === null) this.lookBack();
    for (const { n, meta } of this.store.eachHeldAfter(this.walked!, CHECKPOINT_FILTER)) {
      if (isCheckpoint(meta)) this.ids.push(n);
      this.walked = n;
    }
    // A checkpoint whose file vanished is passed over; when all have, look again from the newest.
    for (let i = this.ids.length - 1; i >= 0; i--) if (this.store.matches(this.ids[i]!, null)) return this.ids[i]!;
    if (this.ids.length === 0) return null;
    this.ids = [];
    this.walked = null;
    return this.newest();
  }

  private lookBack(): void {
    for (let count = 1; ; count *= 2) {
      const mark = this.store.markBeforeNewest(count, CHECKPOINT_FILTER);
      const held = this.store.heldAfter(mark, CHECKPOINT_FILTER);
      const hub = held.filter(({ meta }) => isCheckpoint(meta)).map(({ n }) => n);
      if (hub.length > 0 || mark === 0 || held.length < count) {
        this.ids = hub;
        this.walked = held.at(-1)?.n ?? 0;
        return;
      }
    }
  }
}

const hubCheckpoints = new WeakMap<RelayStore, HubCheckpoints>();

/** The newest hub checkpoint held (agents' `kind: checkpoint` records are none), parsed, or why it cannot be; null when there is none. */
export async function newestCheckpoint(store: RelayStore): Promise<{ n: number; checkpoint: Checkpoint | { invalid: string } } | null> {
  let found = hubCheckpoints.get(store);
  if (!found) hubCheckpoints.set(store, (found = new HubCheckpoints(store)));
  const n = found.newest();
  return n === null ? null : { n, checkpoint: await readCheckpoint(store, n) };
}

const parsed = new WeakMap<RelayStore, { n: number; checkpoint: Checkpoint | { invalid: string } }>();

/** One checkpoint's fields from its file (the last one read is kept: waits and the writer ask for the newest again and again). */
export async function readCheckpoint(store: RelayStore, n: number): Promise<Checkpoint | { invalid: string }> {
  const kept = parsed.get(store);
  if (kept?.n === n) return kept.checkpoint;
  const checkpoint = parseCheckpoint(splitRecordFile(await store.read(store.shape.format(n))).record, store.shape);
  parsed.set(store, { n, checkpoint });
  return checkpoint;
}

/**
 * Said by a wait that found nothing on a read-only store (a mirror or a replica): what its newest checkpoint lists
 * that it lacks, so "nothing new" is not said of a copy that is behind; null everywhere else.
 */
export async function behindAfterEmptyWait(store: RelayStore, appeared: readonly unknown[]): Promise<Behind | null> {
  if (!store.readOnly || appeared.length > 0) return null;
  return behindOf(store, await newestCheckpoint(store).catch(() => null));
}

/** The records the newest checkpoint held here lists and this store does not hold; null when it holds them all (or has no checkpoint). */
function behindOf(store: RelayStore, newest: Awaited<ReturnType<typeof newestCheckpoint>>): Behind | null {
  if (newest === null || 'invalid' in newest.checkpoint) return null;
  const ids: string[] = [];
  let count = 0;
  for (const { n } of newest.checkpoint.listed) {
    if (store.matches(n, null)) continue;
    count++;
    if (ids.length < NAMED_AT_MOST) ids.push(store.shape.format(n));
  }
  return count === 0 ? null : { checkpoint: store.shape.format(newest.n), count, ids };
}

export interface Frontier {
  /** The newest hub checkpoint held, or null. */
  newest: string | null;
  /** Every record up to here is held as the checkpoints up to `verifiedBy` list it; null before the first. */
  verified: string | null;
  verifiedBy: string | null;
  /** The newest checkpoint lists records not held here yet (a replica behind its primary). */
  behind: Behind | null;
  /** The first checkpoint that does not hold, and why: the frontier stops before it. */
  problem: { checkpoint: string; why: string } | null;
}

export class CheckpointFrontier {
  /** The last checkpoint that held, and the last id it covers. */
  private link = { id: 0, chain: GENESIS_CHAIN };
  private verifiedLast = 0;
  private problem: Frontier['problem'] = null;
  private walking: Promise<void> | null = null;

  constructor(private readonly store: RelayStore) {}

  async now(): Promise<Frontier> {
    await (this.walking ??= this.walk().finally(() => (this.walking = null)));
    const store = this.store;
    const newest = await newestCheckpoint(store).catch(() => null);
    return {
      newest: newest ? store.shape.format(newest.n) : null,
      verified: this.link.id === 0 ? null : store.shape.format(this.verifiedLast),
      verifiedBy: this.link.id === 0 ? null : store.shape.format(this.link.id),
      behind: behindOf(store, newest),
      problem: this.problem,
    };
  }

  /** Checks the checkpoints after the last that held, in id order, until one does not (or lists a record not held yet). */
  private async walk(): Promise<void> {
    const store = this.store;
    await store.exists(store.shape.format(0)); // every store call first indexes what other processes appended
    if (this.problem) return;
    for (const { n, meta } of store.heldAfter(this.link.id, CHECKPOINT_FILTER)) {
      if (!isCheckpoint(meta)) continue;
      const c = await readCheckpoint(store, n);
      const id = store.shape.format(n);
      if ('invalid' in c) return void (this.problem = { checkpoint: id, why: `it cannot be read as a checkpoint: ${c.invalid}` });
      if (c.previous.id !== this.link.id || (c.previous.id !== 0 && c.previous.chain !== this.link.chain)) {
        return void (this.problem = { checkpoint: id, why: `it follows ${store.shape.format(c.previous.id)} with another chain than the one held here: a fork` });
      }
      const entries = this.heldEntries(c);
      if (entries === 'missing') return; // behind: looked at again next time
      if (typeof entries === 'string') return void (this.problem = { checkpoint: id, why: entries });
      if (chainOf(c.previous.chain, entries, store.shape) !== c.chain) return void (this.problem = { checkpoint: id, why: 'its records do not hash to its chain' });
      this.link = { id: n, chain: c.chain };
      this.verifiedLast = c.last;
    }
  }

  /** The checkpoint's records with the digests held, 'missing' when one is not held yet, or why one differs. */
  private heldEntries(c: Checkpoint): CheckpointEntry[] | 'missing' | string {
    const store = this.store;
    const entries: CheckpointEntry[] = [];
    const held = store.eachHeldAfter(c.first - 1);
    let next = held.next();
    for (const { n, short } of c.listed) {
      while (!next.done && next.value.n < n) next = held.next();
      if (next.done || next.value.n !== n) return 'missing';
      const digest = next.value.meta.digest;
      if (digest.slice(7, 7 + short.length) !== short) return `${store.shape.format(n)} is held with another digest than it lists`;
      entries.push({ n, digest });
    }
    return entries;
  }
}
