/**
 * What a follower may see, and so how far a cursor may go (spec §8a: a
 * cursor passed back as `after` misses nothing).
 *
 * An id this process linked and has not indexed yet (an append in flight,
 * told by append/id-allocator.ts as it links and by the append once indexed),
 * or a file it saw named and is still reading until it is whole, stops what
 * is visible one below it. A record indexed above that is held back here
 * and announced (the store's `record` event) once what is visible passes it,
 * lowest id first. Both holds are bounded: an append's own directory sync
 * and log note, a file's settle retries (under 2 s), and neither outlives
 * this process.
 */
import type { EventEmitter } from 'node:events';
import type { RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordIndex, RecordMeta } from '../../model/record-index.js';
import type { HeldRecord, RecordBytes, StoreEvents } from './subscription.js';

/** Ids a catch-up takes from the index at a time (eachHeldAfter). */
const HELD_BATCH = 1024;

export interface VisibilityParts {
  index: RecordIndex;
  /** The lowest id of a file seen named and still being read (index/corpus-indexer.ts). */
  indexer: { lowestSettling(): number | null };
  shape: IdShape;
  /** Where announcements go: the store's typed events. */
  events: Pick<EventEmitter<StoreEvents>, 'emit'>;
  /** Hears of every record announced (the index snapshot counts its changes). */
  snapshots: { noteChange(): void };
}

export class Visibility {
  /** Records indexed above what was visible, ascending by id once released. */
  private held: (HeldRecord & { bytes?: RecordBytes })[] = [];
  /** The start-up scan is done: the index holds every record that was on disk. */
  private scanned = false;
  /** Ids this process has linked that the index does not hold yet (a few at most: appends in flight; append/id-allocator.ts tells). */
  private readonly unindexed = new Set<number>();

  constructor(private readonly parts: VisibilityParts) {}

  scanDone(): void {
    this.scanned = true;
  }

  /** This process linked `n` and has not indexed it yet: a cursor stays below it, or a waiter that already saw a higher id would pass it by. */
  linked(n: number): void {
    if (!this.parts.index.has(n)) this.unindexed.add(n);
  }

  /**
   * This process has indexed its own `n` (or given up on it): a cursor may
   * pass it. Announces the record, when it is given (its metadata, and the
   * bytes just written), and what was held back behind it.
   */
  indexed(n: number, record?: { meta: RecordMeta; bytes: RecordBytes }): void {
    this.unindexed.delete(n);
    if (record) this.announce(n, record.meta, record.bytes);
    else this.release();
  }

  /** A record landed (here or by another writer), with its checked bytes where they were just read or written. */
  announce(n: number, meta: RecordMeta, bytes?: RecordBytes): void {
    this.parts.snapshots.noteChange();
    if (this.held.length === 0 && n <= this.visibleUpTo()) this.parts.events.emit('record', meta, n, bytes);
    else {
      this.held.push({ n, meta, bytes });
      this.release();
    }
  }

  /** Announces the held records that are visible now, lowest id first. */
  release(): void {
    if (this.held.length === 0) return;
    const upTo = this.visibleUpTo();
    this.held.sort((a, b) => a.n - b.n);
    let released = 0;
    while (released < this.held.length && this.held[released]!.n <= upTo) released++;
    if (released === 0) return;
    for (const { n, meta, bytes } of this.held.splice(0, released)) this.parts.events.emit('record', meta, n, bytes);
  }

  /**
   * A wait's cursor, read the moment it answers: every record held up to
   * here was considered (answered, or not for this caller), so the highest
   * held id. Until the start-up scan is done, held records below that may
   * still be unread: a wait with a mark then keeps its mark. So does one cut
   * short before its catch-up was sent, raised only by what it answered.
   */
  cursorAfter(after: number | null, atLeast: number, caughtUp: boolean): string {
    const { shape, index } = this.parts;
    if (after !== null && (!caughtUp || !this.scanned)) return shape.format(Math.max(after, atLeast));
    return shape.format(Math.max(after ?? 0, atLeast, Math.min(index.highestHeld(), this.announcedUpTo())));
  }

  /**
   * Held, whole records after a mark that match `filter`, ascending, one at
   * a time: a catch-up that stops early (a wait at its item cap) builds the
   * metadata of no more records than it sends. From relay-0000000 at 1M,
   * building all of them first took ~4.7 CPU-s and ~800 MB for an answer
   * of 10,000.
   */
  *eachHeldAfter(mark: number, filter: RecordFilter | null = null): Generator<HeldRecord> {
    const upTo = this.announcedUpTo(); // what lies above is announced live once visible
    // In batches from the index, each after the last id taken: a catch-up of a
    // million records never holds a million ids, and records indexed meanwhile
    // (announced live) cannot shift it.
    for (let from = mark; ; ) {
      const batch = this.parts.index.matchingAfter(from, filter, HELD_BATCH);
      for (const n of batch) {
        if (n > upTo) return;
        const meta = this.parts.index.get(n)?.meta;
        if (meta) yield { n, meta };
      }
      if (batch.length < HELD_BATCH) return;
      from = batch[batch.length - 1]!;
    }
  }

  /** Every record at or below this has been announced (or was there at the scan): below the first one still held back. */
  private announcedUpTo(): number {
    let upTo = this.visibleUpTo();
    for (const { n } of this.held) if (n - 1 < upTo) upTo = n - 1;
    return upTo;
  }

  /** The lowest id linked here that the index does not hold yet, or null. */
  private lowestUnindexed(): number | null {
    let lowest: number | null = null;
    for (const n of this.unindexed) {
      if (this.parts.index.has(n)) this.unindexed.delete(n); // indexed meanwhile (the watcher saw the link first)
      else if (lowest === null || n < lowest) lowest = n;
    }
    return lowest;
  }

  /** The highest id a cursor may cover: every id at or below it that this process knows to exist is indexed. */
  private visibleUpTo(): number {
    const unindexed = this.lowestUnindexed();
    const settling = this.parts.indexer.lowestSettling();
    const lowest = unindexed === null ? settling : settling === null ? unindexed : Math.min(unindexed, settling);
    return lowest === null ? Infinity : lowest - 1;
  }
}
