/**
 * The one way to follow the records a store holds: catch up from the index
 * with the held records after a mark, then receive every record that lands,
 * each once. Waits (waiters.ts) and event streams (http/sse.ts) are both
 * built on it, so "subscribe first, catch up, drop what both phases saw" is
 * written here and nowhere else.
 *
 * The store is a typed event surface (`EventEmitter<StoreEvents>`): a
 * `record` event for every record it indexes, whatever brought it (its own
 * append, another process, rsync, git), `removed` for a file that vanished,
 * and `closed` once, when the store closes.
 *
 * Filters (`filter`, spec §8a, matched by the store's index; `match`, any
 * other test) are applied to both phases alike, so a filtered wait or stream
 * sees in its catch-up exactly what it would have seen live, and a record no
 * filter accepts is never delivered.
 */
import type { EventEmitter } from 'node:events';
import type { RelayError } from '../../errors.js';
import type { RecordFilter } from '../../model/filter.js';
import type { RecordMeta } from '../../model/record-index.js';

export interface StoreEvents {
  /**
   * A record was indexed after this process started (or became whole
   * again); `n` is its id as a number; `bytes`, where this process has just
   * read and checked them (or written them), so that a wait that inlines
   * them need not read the file again.
   */
  record: [meta: RecordMeta, n: number, bytes?: RecordBytes];
  /** A held record's file vanished from disk (its id stays issued). */
  removed: [id: string];
  /** The store closed: nothing more will land, and every follower should end with this refusal. */
  closed: [reason: RelayError];
}

/** A record's own bytes (below its deposit header) and the digest they were checked against. */
export interface RecordBytes {
  record: Buffer;
  digest: string;
}

/** A held record, with its id as a number. */
export interface HeldRecord {
  n: number;
  meta: RecordMeta;
}

/** What a subscription needs of a store. */
export interface RecordFeed extends Pick<EventEmitter<StoreEvents>, 'on' | 'off'> {
  /** Resolves once the index has been built (the catch-up reads it). */
  readonly ready: Promise<void>;
  /** Held, whole records after a mark, ascending, built as they are taken. */
  eachHeldAfter(mark: number, filter?: RecordFilter | null): Iterable<HeldRecord>;
  /** Whether held record `n` matches `filter`, asked of the index. */
  matches(n: number, filter: RecordFilter | null): boolean;
  /** Says what this subscription listens for, so the feed wakes for it (hear/interest.ts); returns the release. */
  listen?(filter: RecordFilter | null): () => void;
}

export type Phase = 'catch-up' | 'live';

/**
 * Called for each record once. A promise returned during the catch-up is
 * awaited before the next record (a slow socket holds the catch-up back);
 * live records are never waited for.
 */
export type OnRecord = (meta: RecordMeta, n: number, phase: Phase, bytes?: RecordBytes) => void | Promise<void>;

export interface SubscribeOptions {
  /** Catch up with the held records after this mark (0: from the start) first; null: only what lands from now on. */
  after: number | null;
  /**
   * Ids that are not news to this subscriber (files on disk when a wait
   * without a mark began, which this process may notice a moment later).
   * Live records are held back until it settles.
   */
  skip?: Promise<ReadonlySet<number>>;
  /** Only records this accepts are delivered, in either phase. */
  match?: (meta: RecordMeta, n: number) => boolean;
  /** The §8a filters: only records the index says match are delivered, in either phase. */
  filter?: RecordFilter | null;
  /** A live record was held back while the catch-up ran (a stream bounds its backlog with this). */
  onHeld?: (meta: RecordMeta) => void;
  /** The store closed; the subscription has already ended. */
  onClosed?: (reason: RelayError) => void;
}

export interface Subscription {
  /** Settles once the catch-up and the records held back during it have been delivered; rejects if the index could not be read. */
  readonly caughtUp: Promise<void>;
  /** Stops delivery; safe to call more than once. */
  close(): void;
}

const everything = () => true;
const nothing: ReadonlySet<number> = new Set();

export function subscribe(feed: RecordFeed, options: SubscribeOptions, onRecord: OnRecord): Subscription {
  const filter = options.filter ?? null;
  const test = options.match ?? everything;
  const match = filter ? (meta: RecordMeta, n: number) => feed.matches(n, filter) && test(meta, n) : test;
  let skip: ReadonlySet<number> = nothing;
  // Live records wait here while the catch-up (or the skip list) is pending.
  let heldBack: (HeldRecord & { bytes?: RecordBytes })[] | null = options.after === null && options.skip === undefined ? null : [];
  let ended = false;

  const live = (meta: RecordMeta, n: number, bytes?: RecordBytes) => {
    if (ended || skip.has(n) || !match(meta, n)) return;
    if (heldBack === null) return void onRecord(meta, n, 'live', bytes);
    heldBack.push({ n, meta, bytes });
    options.onHeld?.(meta);
  };
  const closed = (reason: RelayError) => {
    if (ended) return;
    close();
    options.onClosed?.(reason);
  };
  const close = () => {
    ended = true;
    heldBack = null;
    feed.off('record', live);
    feed.off('closed', closed);
    release();
  };
  // Say what to wake for first: the feed then looks for what its peers
  // added, and what it finds landed before this subscription (a catch-up
  // from the index includes it). Then listen before reading the index, so
  // nothing landing in between is lost.
  const release = feed.listen?.(filter) ?? (() => {});
  feed.on('record', live);
  feed.on('closed', closed);

  const catchUp = async (): Promise<void> => {
    if (options.skip) skip = await options.skip.catch(() => nothing);
    const sent = new Set<number>();
    if (options.after !== null) {
      if (!(await indexReady(feed, () => ended))) return;
      for (const { n, meta } of feed.eachHeldAfter(options.after, filter)) {
        if (ended) return;
        if (skip.has(n) || !test(meta, n)) continue; // eachHeldAfter applied the filter
        sent.add(n);
        const pending = onRecord(meta, n, 'catch-up');
        if (pending) await pending;
      }
    }
    const backlog = heldBack ?? [];
    heldBack = null;
    for (const { n, meta, bytes } of backlog) {
      if (ended) return;
      if (!sent.has(n) && !skip.has(n)) void onRecord(meta, n, 'live', bytes);
    }
  };
  const caughtUp = heldBack === null ? Promise.resolve() : catchUp();
  caughtUp.catch(close);
  return { caughtUp, close };
}

/** Waits for the feed's index: false when the subscription ended meanwhile (onClosed has said so); a failure otherwise is thrown. */
async function indexReady(feed: RecordFeed, ended: () => boolean): Promise<boolean> {
  try {
    await feed.ready;
    return true;
  } catch (err) {
    if (ended()) return false;
    throw err;
  }
}
