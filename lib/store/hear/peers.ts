/**
 * Hearing what peers (this store's other processes) have added, without a
 * watch on the directory: the issued log says how far ids have gone, and
 * every id up to there not held yet is looked for on disk, in id order.
 *
 * Synchronous, and one stat when nothing is new, so it runs before every
 * operation, on every ring, and before an append or a listing indexes a
 * higher id: a record is then never indexed while a lower one that exists
 * is not, which is what lets a cursor trust the highest held id.
 */
import type { Logger } from '../../log.js';
import type { IdShape } from '../../model/ids.js';
import type { IssuedHint, IssuedLine } from '../../model/issued-line.js';
import type { RecordIndex } from '../../model/record-index.js';
import type { CorpusIndexer } from '../index/corpus-indexer.js';

/** How far a look goes: up to the highest id the issued log noted (or only up to `upTo`), and whether past that. */
export interface HowToLook {
  upToLog: boolean;
  past: boolean;
}

/**
 * Past the highest issued id only where a record may be there that no line
 * names yet (a ring, the tick, a wait starting or answering): it costs a
 * stat, so not before every operation.
 */
export const LOOK_PAST: HowToLook = { upToLog: true, past: true };
/** Only up to `upTo`: for an append about to index its own record (looking further would read that record). */
export const ONLY_BELOW: HowToLook = { upToLog: false, past: false };
/** At most this many ids looked for on disk in one look. */
const MAX_PROBE = 20_000;

export interface PeerParts {
  index: RecordIndex;
  /** The issued log (append/issued-log.ts): the ids other processes noted since the last look, with their records' hints. */
  issued: { readNew(): IssuedLine[] };
  indexer: CorpusIndexer;
  shape: IdShape;
  log: Logger;
}

export class Peers {
  /** Every id up to here has been looked for on disk, in order. */
  private probedUpTo = 0;
  private state: 'before-scan' | 'hearing' | 'stopped' = 'before-scan';
  /** Hints read from the log for ids not looked at yet (above probedUpTo), kept until they are. */
  private readonly hints = new Map<number, IssuedHint>();

  constructor(private readonly parts: PeerParts) {}

  /** The start-up scan is done: every id up to the index's highest has been looked at. */
  start(): void {
    if (this.state !== 'before-scan') return;
    this.state = 'hearing';
    this.probedUpTo = this.parts.index.highest;
  }

  /** The store is closing: nothing more is looked for. */
  stop(): void {
    this.state = 'stopped';
  }

  /** A ring, a tick, a listener arriving, a wait about to answer: look past the highest id too. */
  readonly lookPast = (): void => this.hear(0, LOOK_PAST);

  /**
   * Indexes what peers have added since the last look, up to the issued
   * log's highest id or `upTo`, whichever is higher (only up to `upTo` with
   * ONLY_BELOW). The log is read every time, so that each id is held from
   * its line where the line describes its record, not read from its file.
   */
  hear(upTo = 0, how: HowToLook = { upToLog: true, past: false }): void {
    if (this.state !== 'hearing') return;
    const { index, indexer } = this.parts;
    this.readLog();
    // Only below: up to upTo exactly (the highest may already count the append's own id); what the log noted above waits for the next look.
    let top = how.upToLog ? Math.max(index.highest, upTo) : upTo;
    for (let n = this.firstToLookAt(top); n <= top; n++) if (!index.has(n)) void indexer.ingestNoted(n, this.hints.get(n));
    // A record can be linked a moment before its line is written, and rsync
    // or git write none: ids are issued densely, so look on past the top
    // until a name is not there (one stat when nothing is new).
    for (const last = how.past ? top + MAX_PROBE : top; top < last; top++) {
      const n = top + 1;
      if (!indexer.mayBeOnDisk(n)) break;
      // Its writer notes the line just after the link: it is most often there by now, and a line spares the file's read.
      if (!this.hints.has(n)) this.readLog();
      void indexer.ingestNoted(n, this.hints.get(n));
      if (!index.has(n) && !indexer.isSettling(n)) break;
    }
    if (top > this.probedUpTo) this.probedUpTo = top;
    for (const n of this.hints.keys()) if (n <= this.probedUpTo) this.hints.delete(n);
  }

  /** Takes in what the log noted since the last read: hints for the ids not looked at yet, the ids of re-deposits below. */
  private readLog(): void {
    const { index, indexer } = this.parts;
    for (const { n, hint } of this.parts.issued.readNew()) {
      if (n > this.probedUpTo) {
        if (hint !== null) this.hints.set(n, hint);
        // Issued is issued, even while a record meant for a listener here is still being read: the next free id is past it.
        index.noteIssued(n);
      }
      // A re-deposit fills in an id below what was looked at: the log is how it is heard.
      else if (!index.has(n)) void indexer.ingest(n);
    }
  }

  /** A directory listing: the ids below the highest it names are looked at first and in order, so no cursor passes one. */
  heardListing(names: readonly string[]): void {
    this.hear(highestIdIn(names, this.parts.shape));
  }

  private firstToLookAt(top: number): number {
    const from = this.probedUpTo + 1;
    if (top - from < MAX_PROBE) return from;
    // An id far ahead (a file dropped in by hand): the listing finds what lies between.
    const { shape } = this.parts;
    this.parts.log.warn(`ids jumped from ${shape.format(this.probedUpTo)} to ${shape.format(top)}; looking at the newest ${MAX_PROBE} only, the next listing finds the rest`);
    return top - MAX_PROBE + 1;
  }
}

/** The highest id a directory listing names, or 0. */
function highestIdIn(names: readonly string[], shape: IdShape): number {
  let highest = 0;
  for (const name of names) {
    const n = shape.parseRecordId(name);
    if (n !== null && n > highest) highest = n;
  }
  return highest;
}
