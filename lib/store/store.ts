/**
 * The store: one corpus directory, append-only, one immutable file per record.
 *
 * It is the single core every door calls (MCP tools, REST routes, the CLI):
 * append, exists, read, list, replies, wait. It keeps an in-memory index
 * built by scanning the corpus at open, then fed by its own appends and by
 * what it hears other writers add.
 *
 * This class is the facade: the lifecycle, and each operation handed to the
 * wing that does it (wings.ts says who is given what): append/ stores,
 * index/ keeps the index true to the disk, hear/ notices what peers add,
 * follow/ decides what a follower may see and when, read/ answers from the
 * index and the files, agents/ keeps a named agent's marks and roster.
 */
import { EventEmitter } from 'node:events';
import type { IdShape } from '../model/ids.js';
import type { IdState } from '../model/record-index.js';
import type { RecordFilter } from '../model/filter.js';
import { corpusPaths, type CorpusPaths } from '../disk/paths.js';
import type { AgentDeliveries } from './agents/deliveries.js';
import type { OpenQuestions } from './agents/open-questions.js';
import type { RosterEntry } from './agents/roster.js';
import { readOnlyRefusal } from './append/read-only.js';
import type { LiveWorkClaim } from './append/work-claims.js';
import { subscribe, type HeldRecord, type OnRecord, type RecordFeed, type StoreEvents, type SubscribeOptions, type Subscription } from './follow/subscription.js';
import type { Waiters, WaitResult } from './follow/waiters.js';
import type { StoreState } from './lifecycle.js';
import { load, prepare } from './opening.js';
import type { AppendOptions, AppendResult, ListIds, ListResult, RepliesResult, StoreOptions, WaitOptions } from './store-options.js';
import { makeWings, type Wings } from './wings.js';

export type { AppendOptions, AppendResult, ListIds, ListResult, RepliesResult, StoreOptions, WaitOptions } from './store-options.js';
export type { StoreState } from './lifecycle.js';
// What the doors name of the wings: outside lib/store/ nothing imports a wing
// itself (docs/architecture.md; test/docs/architecture.test.ts holds it).
export type { Subscription } from './follow/subscription.js';
export { appeared, clampWait, DEFAULT_WAIT_MS, MAX_WAIT_MS, PROGRESS_EVERY_MS, UNHELD_MAX_WAIT_MS, UNHELD_SLACK_MS, WAIT_MAX_ITEMS, type AppearedRecord, type WaitResult } from './follow/waiters.js';
export { readOnlyRefusal } from './append/read-only.js';
export type { LiveWorkClaim } from './append/work-claims.js';
export { Roster, type RosterEntry } from './agents/roster.js';
export { undelivered } from './agents/deliveries.js';
export { OPEN_FOR_MS, OPEN_SHOWN } from './agents/open-questions.js';
export { formatMark, readMarkFile, writeMarkFile, type Mark } from './agents/mark-file.js';

export class RelayStore extends EventEmitter<StoreEvents> implements RecordFeed {
  readonly paths: CorpusPaths;
  readonly maxRecordBytes: number;
  readonly readOnly: boolean;
  readonly primary: string | undefined;
  readonly shape: IdShape;
  readonly waiters: Waiters;
  /** A named agent's marks and deliveries (spec §8d). */
  readonly agents: AgentDeliveries;
  /** A named agent's open questions, and whom an answer goes to (agents/open-questions.ts). */
  readonly questions: OpenQuestions;
  private readonly w: Wings;
  /** Appends under way; close lets them finish before it closes the handles they write through. */
  private readonly appending = new Set<Promise<unknown>>();

  /**
   * Use `RelayStore.prepare()` (or `openStore()`): it reads the store's id
   * width first, which schemas and messages need before the scan is done.
   */
  constructor(options: StoreOptions, shape: IdShape) {
    super();
    // Every blocked wait and open stream listens for 'record'.
    this.setMaxListeners(0);
    this.shape = shape;
    this.paths = corpusPaths(options.corpus);
    this.primary = options.primary;
    this.w = makeWings(this, options, shape, this.paths);
    ({ maxRecordBytes: this.maxRecordBytes, readOnly: this.readOnly, waiters: this.waiters, agents: this.agents, questions: this.questions } = this.w);
  }

  /** Checks the corpus is there and reads its settings; cheap, and enough to describe the tools. */
  static async prepare(options: StoreOptions): Promise<RelayStore> {
    const prepared = await prepare(options);
    return new RelayStore(prepared.options, prepared.shape);
  }

  /** Scans the corpus and starts hearing. Repeat calls return the same promise; after close it is refused. */
  open(): Promise<void> {
    // An open that failed builds no snapshot: let the processes waiting for one go.
    return this.w.life.open(() => load(this.w), () => void this.w.snapshots.releaseBuild());
  }

  /** Resolves when the start-up scan is done; calls that need the index await it. */
  get ready(): Promise<void> {
    return this.open();
  }

  /** prepared → opening → open → closing → closed; a store never opens again once it closes. */
  get state(): StoreState {
    return this.w.life.state;
  }

  get size(): number {
    return this.w.index.size;
  }

  /** Records held unverified now, from a first look (a lazy index: index/corpus-indexer.ts); the tests and the bench read it. */
  get unverified(): number {
    return this.w.index.unverifiedCount;
  }

  /** Ids another writer took first while this store tried to link them (append/id-allocator.ts; the hub's /metrics). */
  get idsLost(): number {
    return this.w.ids.lost;
  }

  /** The highest id held now (0 for none): where a new agent mark's broadcasts begin. */
  get head(): number {
    return this.w.index.highestHeld();
  }

  /**
   * Ends every blocked wait and stream with the closed refusal, stops the scan and the hearing (an open in progress stops at
   * its next step), waits for it and for appends under way, then closes every handle. Every call answers the same promise.
   */
  close(): Promise<void> {
    const { w } = this;
    let bellsClosed: Promise<void> | undefined;
    return w.life.close({
      stopNow: () => {
        this.emit('closed', w.life.closedRefusal());
        w.peers.stop();
        w.interests.stop();
        w.indexer.close();
        w.watcher.close();
        bellsClosed = w.bells?.close();
      },
      shutDown: async () => {
        await Promise.allSettled([...this.appending]);
        w.watcher.close();
        await w.indexer.settled();
        for (const part of [w.index, w.snapshots, w.agents.roster, w.dirSync, w.issued, w.leftovers]) await part.close();
        await bellsClosed; // nothing is written under .state/bells/ or bell-holders/ after close
      },
    });
  }

  /**
   * Every operation starts here: refused after close, else waits for the
   * scan, then hears what peers added. An append hears them where it needs
   * them instead, just before its link (append/id-allocator.ts).
   */
  private async opened(hear = true): Promise<void> {
    this.w.life.refuseIfClosed();
    await this.open();
    this.w.life.refuseIfClosed();
    if (hear) this.w.peers.hear();
  }

  /** Stores one record and answers once it is durable on disk (or, where it cannot be, says so in the answer). */
  append(bytes: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    const appending = (async () => {
      if (this.readOnly) throw readOnlyRefusal(this.primary);
      // Checked before the scan is awaited: bad bytes are refused at once, even while a large corpus opens.
      const checked = this.w.appender.check(bytes, options);
      await this.opened(false);
      return this.w.appender.append(checked);
    })();
    this.appending.add(appending);
    void appending.catch(() => {}).finally(() => this.appending.delete(appending));
    return appending;
  }

  /** Every live work claim (spec §8e): holder, targets, id, lapse; oldest first. */
  async workClaims(): Promise<LiveWorkClaim[]> {
    await this.opened();
    return this.w.workClaims.live();
  }

  /** Everyone on the roster (spec §8d): names that served, signed or were given a key, when last seen, waiting now. */
  roster(): Promise<RosterEntry[]> {
    return this.w.agents.roster.entries();
  }

  async exists(id: string): Promise<{ id: string; state: IdState }> {
    await this.opened();
    return this.w.reads.exists(id);
  }

  /** The file's exact bytes (deposit header, `---`, record), its digest re-checked. */
  async read(id: string): Promise<Buffer> {
    await this.opened();
    return (await this.w.reads.read(id)).file;
  }

  /** Held and KNOWN_MISSING ids after a mark. A filter selects held records; a missing id has no headers, so with a filter the missing list is empty. */
  async list(after?: string, filter: RecordFilter | null = null): Promise<ListResult> {
    const ids = await this.listIds(after, filter);
    return { after: ids.after, present: ids.present.map(this.shape.format), knownMissing: ids.knownMissing.map(this.shape.format) };
  }

  /** The same ids as numbers: a door that refuses a list past a size (list_relays) counts before it formats (1.1 CPU-s at 1M). */
  async listIds(after?: string, filter: RecordFilter | null = null): Promise<ListIds> {
    await this.opened();
    const mark = after === undefined ? 0 : await this.markOf(after, true);
    await this.w.index.warm(filter); // a first search reads every record, without holding the loop
    return this.w.listing.idsAfter(after, mark, filter);
  }

  async replies(id: string): Promise<RepliesResult> {
    await this.opened();
    return this.w.listing.replies(id);
  }

  /**
   * Blocks until a record matching `filter` lands after `after` (or, without
   * it, after the call began), or the time runs out. A wait with a mark
   * answers from the index, so it needs the scan; one for "whatever lands
   * from now on" listens at once, even mid-scan.
   */
  async wait(options: WaitOptions): Promise<WaitResult & { cursor: string }> {
    this.w.life.refuseIfClosed();
    const after = options.after === undefined ? null : await this.markOf(options.after);
    if (after !== null) await this.w.index.warm(options.filter ?? null); // as listIds
    if (after === null) void this.open().then(() => this.w.peers.hear(), () => {});
    return this.w.waits.wait(options, after);
  }

  /**
   * Follows the records this store holds: the held ones after `after` first
   * (once the index is built), then each one that lands, once. The one
   * subscription API; waits and event streams are built on it.
   */
  subscribe(options: SubscribeOptions, onRecord: OnRecord): Subscription {
    this.w.life.refuseIfClosed();
    return subscribe(this.w.feed, options, onRecord);
  }

  /** A subscription's interest, until the returned function is called (hear/interest.ts). */
  listen(filter: RecordFilter | null): () => void {
    return this.w.interests.listen(filter);
  }

  /** Bells and directory watches in use now (inotify watches; tests and the bench read it). */
  get listening(): { bells: number; directory: boolean } {
    return this.w.interests.listening;
  }

  /** Held, whole records after a mark that match `filter`, ascending (a subscription's catch-up). */
  heldAfter(mark: number, filter: RecordFilter | null = null): HeldRecord[] {
    return [...this.eachHeldAfter(mark, filter)];
  }

  /** The same, one at a time, built as they are taken (follow/visibility.ts). */
  eachHeldAfter(mark: number, filter: RecordFilter | null = null): Generator<HeldRecord> {
    return this.w.visibility.eachHeldAfter(mark, filter);
  }

  /** The mark after which the held records matching `filter` are the newest `count` (`tail -n`). */
  markBeforeNewest(count: number, filter: RecordFilter | null = null): number {
    return this.w.index.markBeforeNewest(count, filter);
  }

  /** Whether held record `n` matches `filter` (spec §8a), from the index. */
  matches(n: number, filter: RecordFilter | null): boolean {
    return this.w.index.matches(n, filter);
  }

  /** An `after` mark every door takes, parsed, then checked against this store once it is open (read/listing.ts). */
  async markOf(after: string, listing = false): Promise<number> {
    const n = this.w.listing.parseAfter(after);
    await this.opened();
    return this.w.listing.checkMark(n, listing);
  }
}

export async function openStore(options: StoreOptions): Promise<RelayStore> {
  const store = await RelayStore.prepare(options);
  await store.open();
  return store;
}
