/**
 * When to load and when to write the index snapshot (`.state/index`, see
 * index-snapshot.ts), for one store.
 *
 * - At open: load it if it is whole, of this format and width, and not ahead
 *   of the issued log (a log that is behind it means `.state/` came from
 *   somewhere else, or lost its log). The store then checks it against the
 *   directory listing.
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
import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import type { Logger } from '../../log.js';
import type { IdShape } from '../../model/ids.js';
import type { IdempotencyKeys } from '../../model/idempotency-keys.js';
import type { RecordIndex } from '../../model/record-index.js';
import { readSnapshot, snapshotHeader, writeSnapshot, type DirectoryStamp } from './index-snapshot.js';
import { takeBuildTurn } from './snapshot-build.js';
import type { CorpusPaths } from '../../disk/paths.js';
import { recordIdsIn } from '../../disk/record-names.js';
import { spotCheck } from './snapshot-check.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../../model/record.js';

/**
 * A directory whose times were already this old when it was stamped cannot
 * have changed since without moving them (a change within the same
 * timestamp tick as the look might not: the watcher's rule, watch.ts).
 */
const RACY_MS = 1000;

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

  constructor(
    private readonly index: RecordIndex,
    private readonly shape: IdShape,
    /** True on a network filesystem: its directory times cannot be trusted, so it is always listed. */
    private readonly shared: () => boolean,
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
   * Fills the (empty) index from the snapshot if there is a usable one. Says
   * whether it did, and whether the corpus directory is provably as it was
   * when the snapshot's ids were listed (then the store need not list it).
   */
  async load(): Promise<{ loaded: boolean; unchanged: boolean }> {
    const no = { loaded: false, unchanged: false };
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
    const mismatch = spotCheck(snapshot.image, this.paths, this.shape, DEFAULT_MAX_RECORD_BYTES);
    if (mismatch !== null) {
      this.log.warn(`not using the index snapshot ${this.paths.snapshot}: ${mismatch} (a snapshot of another corpus, or edited); reading every record`);
      return no;
    }
    try {
      this.index.load(snapshot.image);
    } catch (err) {
      this.log.info(`not using the index snapshot: ${(err as Error).message}; reading every record`);
      return no;
    }
    for (const [n, scope] of snapshot.keys) if (this.index.has(n)) this.keys.note(scope, n);
    return { loaded: true, unchanged: this.stillAsStamped(snapshot.stamp) };
  }

  /** The directory has the identity and times of the stamp, and those were settled when it was taken. */
  private stillAsStamped(stamp: DirectoryStamp | null): boolean {
    if (!stamp || this.shared()) return false;
    const now = stampOf(this.paths.corpus);
    if (now === null || now.dev !== stamp.dev || now.ino !== stamp.ino) return false;
    if (now.mtimeMs !== stamp.mtimeMs || now.ctimeMs !== stamp.ctimeMs) return false;
    return stamp.takenAt - Math.max(stamp.mtimeMs, stamp.ctimeMs) > RACY_MS;
  }

  /**
   * A stamp for `ids`: the directory looked at, then listed; only when the
   * listing is exactly `ids` does the stamp vouch for them.
   */
  private async stampFor(ids: Int32Array): Promise<DirectoryStamp | null> {
    if (this.shared()) return null;
    const before = stampOf(this.paths.corpus);
    if (!before || before.takenAt - Math.max(before.mtimeMs, before.ctimeMs) <= RACY_MS) return null; // changed just now: a loader would not trust it
    const listed = Int32Array.from(recordIdsIn(await fs.readdir(this.paths.corpus), this.shape)).sort();
    if (listed.length !== ids.length) return null;
    for (let i = 0; i < ids.length; i++) if (listed[i] !== ids[i]) return null;
    return before;
  }

  /** What the start-up check or scan did: write a snapshot now if it was worth it. */
  afterScan(result: { fromSnapshot: boolean; read: number; dropped: number }): void {
    this.changes = result.read + result.dropped;
    if (!result.fromSnapshot || result.dropped > 0 || this.changes >= rewriteThreshold(this.index.size)) this.schedule(0);
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
      if (there && there.records >= this.index.size && there.highWater >= this.index.highest) {
        this.changes -= changes; // another process wrote one as complete as ours
        return;
      }
      const image = this.index.toImage();
      const keys = this.keys.entries();
      const stamp = await this.stampFor(image.ids);
      await writeSnapshot(this.paths.snapshot, this.paths.tmp, { image, stamp, width: this.shape.width, issued: this.issuedHighest(), keys });
      this.changes -= changes;
      this.log.debug(`wrote the index snapshot (${this.index.size} records) to ${this.paths.snapshot}`);
    } catch (err) {
      // A read-only mirror without .state/tmp, a full disk: the next start reads the records instead.
      this.log.debug(`could not write the index snapshot ${this.paths.snapshot}: ${(err as Error).message}`);
    }
  }
}

function stampOf(dir: string): DirectoryStamp | null {
  try {
    const stat = statSync(dir);
    return { dev: stat.dev, ino: stat.ino, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, takenAt: Date.now() };
  } catch {
    return null;
  }
}
