/**
 * When to load and when to write the index snapshot (`.state/index`, see
 * index-snapshot.ts), for one store.
 *
 * - At open: load it if it is whole, of this format and width, and not ahead
 *   of the issued log (a log that is behind it means `.state/` came from
 *   somewhere else, or lost its log). The store then checks it against the
 *   directory listing, every time: the file is `.state/` state, which anyone
 *   who can write there can write, so nothing it says vouches for itself.
 * - After a full scan, after a check that found the disk had lost records,
 *   or once this process has seen enough records the snapshot lacks (so that
 *   the next process to start does not read them all again): write it, off
 *   the path of any answer. Every process of a swarm sees the same records,
 *   so a process first looks at the snapshot's header and does not write
 *   when another has already written one as complete as its own.
 * - Before open, on a corpus with no snapshot worth reading: one process of
 *   those starting together builds it, and the rest wait for it (bounded),
 *   so a swarm's cold start reads the records once (snapshot-build.ts).
 */
import { existsSync } from 'node:fs';
import type { Logger } from '../../log.js';
import type { IdShape } from '../../model/ids.js';
import type { IdempotencyKeys } from '../../model/idempotency-keys.js';
import type { IndexImage, RecordIndex } from '../../model/record-index.js';
import { readSnapshot, snapshotHeader, writeSnapshot } from './index-snapshot.js';
import { takeBuildTurn } from './snapshot-build.js';
import type { CorpusPaths } from '../../disk/paths.js';
import { spotCheck } from './snapshot-check.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../../model/record.js';

/**
 * Below this many records reading them all costs a few milliseconds, less
 * than writing the snapshot would; such a store writes none.
 */
export const SNAPSHOT_MIN_RECORDS = 500;

/** Records a snapshot may lack before it is rewritten: enough to amortise writing it, few enough to read quickly at start. */
export function rewriteThreshold(size: number): number {
  return Math.max(1000, Math.floor(size / 100));
}

export class SnapshotKeeper {
  /** Records added or removed since the snapshot this process loaded or wrote. */
  private changes = 0;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private closed = false;
  /** Set while this process builds the first snapshot for the others: removes the build lock. */
  private building: (() => Promise<void>) | null = null;
  /** The snapshot read at start said what the files do not: rewrite it, however complete its header says it is. */
  private contradicted = false;

  constructor(
    private readonly index: RecordIndex,
    private readonly shape: IdShape,
    /** The idempotency keys of held records travel in the snapshot too (spec §8b: the scan reads them back). */
    private readonly keys: IdempotencyKeys,
    private readonly paths: CorpusPaths,
    private readonly issuedHighest: () => number,
    private readonly log: Logger,
  ) {}

  /**
   * Before load: where there is no snapshot to read and enough records that
   * one will be written, either take the turn to build it (this process
   * reads the corpus; the lock is held until the snapshot is written) or
   * wait, bounded, for the process that has it. `stopped` ends a wait when
   * the store closes.
   */
  async takeTurn(recordsOnDisk: () => Promise<number>, stopped: () => boolean, options: { maxWaitMs?: number; staleMs?: number } = {}): Promise<void> {
    const there = () => snapshotHeader(this.paths.snapshot, this.shape.width).then((header) => header !== null);
    if ((await there()) || (await recordsOnDisk()) < SNAPSHOT_MIN_RECORDS) return;
    const turn = await takeBuildTurn({ lock: this.paths.snapshotBuild, log: this.log, snapshotThere: there, stopped, ...options });
    if (turn.role === 'build') this.building = turn.release;
    else if (turn.waitedMs > 0) this.log.debug(`waited ${turn.waitedMs} ms for another process's index snapshot`);
  }

  /** Lets waiting processes go on (they read the snapshot, or the corpus if none came). */
  async releaseBuild(): Promise<void> {
    await this.building?.(); // the release runs once; later calls await the same
  }

  /**
   * Fills the (empty) index from the snapshot if there is a usable one, and
   * says whether it did. The snapshot is a cache, never an authority (anyone
   * who can write `.state/` can write it): its high-water mark is not read
   * (the issued log is the durable one, noted before this), rows past the
   * newest record on disk are cut (one stat, mostly), the scan then checks
   * every other row against a listing of the directory, and an idempotency
   * key it carries answers only once the record's own header says it
   * (append/keyed-append.ts).
   */
  async load(): Promise<{ loaded: boolean }> {
    const no = { loaded: false };
    const read = await readSnapshot(this.paths.snapshot, this.shape.width);
    if ('refused' in read) {
      this.log.debug(`not using the index snapshot ${this.paths.snapshot}: ${read.refused}; reading every record`);
      return no;
    }
    const { snapshot } = read;
    if (snapshot.issued > this.issuedHighest()) {
      this.log.info(
        `not using the index snapshot: it knows ids up to ${snapshot.issued} were issued and ${this.paths.issued} does not ` +
          '(copied from elsewhere, or the log was cut); reading every record',
      );
      return no;
    }
    const image = this.heldTail(snapshot.image);
    const highest = Math.max(this.issuedHighest(), image.ids.length === 0 ? 0 : image.ids[image.ids.length - 1]!);
    if (snapshot.image.highWater > highest) {
      this.contradicted = true;
      this.log.warn(`the index snapshot says ids up to ${this.shape.format(snapshot.image.highWater)} were issued, and neither the records nor ` +
        `${this.paths.issued} say an id past ${this.shape.format(highest)} was; not believed`);
    }
    const mismatch = spotCheck(image, this.paths, this.shape, DEFAULT_MAX_RECORD_BYTES);
    if (mismatch !== null) {
      this.log.warn(`not using the index snapshot ${this.paths.snapshot}: ${mismatch} (a snapshot of another corpus, or edited); reading every record`);
      return no;
    }
    try {
      this.index.load(image);
    } catch (err) {
      this.log.info(`not using the index snapshot: ${(err as Error).message}; reading every record`);
      return no;
    }
    for (const [n, scope] of snapshot.keys) if (this.index.has(n)) this.keys.note(scope, n);
    return { loaded: true };
  }

  /**
   * The image without its high-water mark and without the rows above the
   * newest record whose file is there: a row's id raises the mark as it
   * loads, and the mark never comes down (ids are never reused), so a row
   * for a file that is not there (relay-9999 written into the snapshot)
   * would end assignment for everyone. The rows below are the listing's.
   */
  private heldTail(image: IndexImage): IndexImage {
    let count = image.ids.length;
    while (count > 0 && !existsSync(this.paths.record(this.shape.format(image.ids[count - 1]!)))) count--;
    if (count < image.ids.length) {
      this.contradicted = true;
      this.log.warn(`the index snapshot names ${image.ids.length - count} record${image.ids.length - count === 1 ? '' : 's'} past the newest on disk ` +
        `(up to ${this.shape.format(image.ids[image.ids.length - 1]!)}); not held`);
    }
    return { ...cutImage(image, count), highWater: 0 };
  }

  /** What the start-up check or scan did: write a snapshot now if it was worth it. */
  afterScan(result: { fromSnapshot: boolean; read: number; dropped: number }): void {
    this.changes = result.read + result.dropped;
    if (result.dropped > 0) this.contradicted = true;
    if (!result.fromSnapshot || this.contradicted || this.changes >= rewriteThreshold(this.index.size)) this.schedule(0);
    if (!this.timer && !this.writing) void this.releaseBuild(); // nothing will be written: nobody should wait for it
  }

  /** A record was added to or removed from the index after start. */
  noteChange(): void {
    if (++this.changes >= rewriteThreshold(this.index.size) && !this.timer && !this.writing) {
      // Spread out: twenty processes see the same records at once, and the first to write spares the rest.
      this.schedule(1000 + Math.floor(Math.random() * 2000));
    }
  }

  /** Finishes a write under way, and makes one that was due (a short-lived CLI process leaves its scan behind). */
  async close(): Promise<void> {
    this.closed = true;
    const due = this.timer !== null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (due && !this.writing) this.writing = this.write();
    await this.writing;
    await this.releaseBuild();
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.closed || this.index.size < SNAPSHOT_MIN_RECORDS) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writing ??= this.write().finally(() => {
        this.writing = null;
        return this.releaseBuild();
      });
    }, delayMs);
    this.timer.unref();
  }

  private async write(): Promise<void> {
    const changes = this.changes;
    try {
      const there = await snapshotHeader(this.paths.snapshot, this.shape.width);
      if (!this.contradicted && there && there.records >= this.index.size && there.highWater >= this.index.highest) {
        this.changes -= changes; // another process wrote one as complete as ours
        return;
      }
      const image = this.index.toImage();
      const keys = this.keys.entries();
      // No directory stamp: a snapshot's rows are checked against a listing at every start, whatever it says.
      await writeSnapshot(this.paths.snapshot, this.paths.tmp, { image, stamp: null, width: this.shape.width, issued: this.issuedHighest(), keys });
      this.changes -= changes;
      this.contradicted = false;
      this.log.debug(`wrote the index snapshot (${this.index.size} records) to ${this.paths.snapshot}`);
    } catch (err) {
      // A read-only mirror without .state/tmp, a full disk: the next start reads the records instead.
      this.log.debug(`could not write the index snapshot ${this.paths.snapshot}: ${(err as Error).message}`);
    }
  }
}

/** The first `count` rows of an image (its columns cut, not copied). */
function cutImage(image: IndexImage, count: number): IndexImage {
  if (count === image.ids.length) return image;
  let named = 0;
  for (let at = 0; at < count; at++) named += image.namedCount[at]!;
  return {
    ...image,
    ids: image.ids.subarray(0, count),
    flags: image.flags.subarray(0, count),
    kind: image.kind.subarray(0, count),
    from: image.from.subarray(0, count),
    to: image.to.subarray(0, count),
    depositedBy: image.depositedBy.subarray(0, count),
    depositedAt: image.depositedAt.subarray(0, count),
    digest: image.digest.subarray(0, count * 32),
    namedCount: image.namedCount.subarray(0, count),
    named: image.named.subarray(0, named),
    odd: image.odd.filter(([at]) => at < count),
  };
}
