/**
 * Keeps one process's index true to what the disk holds: the start-up scan,
 * then whatever the watcher sees other writers add or remove (other server
 * processes, the CLI, rsync, git pull).
 *
 * A file found by the scan was there before this process; one seen later is
 * news, announced through `onNews` so that waiters and streams wake. A file
 * seen later may still be being written in place (git pull does that), so a
 * failing digest is retried briefly (settling.ts) before the file is called
 * damaged, and a damaged file is looked at again on every reconcile.
 *
 * A record another writer added after the scan is held unverified (record-index.ts) from its issued-log line, or
 * else from a first look (record-peek.ts: one page read, digest, header
 * lines), unless a listener here may want it; the rest waits until a call
 * needs it (a listing, list_replies, exists on an id it names, a filter it
 * matches), and `verifyHeld` reads it whole then. Nothing is announced for
 * it: nobody here had a use for it when it landed.
 */
import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import { isRelayError } from '../../errors.js';
import { splitRecordFile, type Deposit, type SplitFile } from '../../model/deposit.js';
import { boundToBytes, idempotencyScope, ownAnswerKey, type IdempotencyKeys } from '../../model/idempotency-keys.js';
import { sortedDifference, type IdShape } from '../../model/ids.js';
import type { IssuedHint } from '../../model/issued-line.js';
import type { Logger } from '../../log.js';
import type { CorpusPaths } from '../../disk/paths.js';
import type { RecordClaims } from '../../model/record.js';
import { listRecordIds, recordIdsIn } from '../../disk/record-names.js';
import { diskRecords, type RecordReader } from '../../disk/record-file.js';
import { claimsOf, metaOf } from './parsed-record.js';
import { RecordPeeker, type Peek } from './record-peek.js';
import { SETTLE_DELAYS_MS, Settling, type Look } from './settling.js';
import type { RecordIndex, RecordMeta } from '../../model/record-index.js';

/** Files the scan reads between two turns of the event loop. */
const SCAN_BATCH = 64;
/** Settled: nothing to wait for (one shared promise, not one per record). */
const DONE: Promise<void> = Promise.resolve();

type Source = 'scan' | 'seen' | 'recheck';

export interface CorpusIndexerOptions {
  index: RecordIndex;
  shape: IdShape;
  paths: CorpusPaths;
  log: Logger;
  /** Fed with the idempotency key of every whole record indexed (spec §8b). */
  keys?: IdempotencyKeys;
  /** The store's record limit: a file far past it is not read (lib/disk/record-file.ts). */
  maxRecordBytes?: number;
  /** A record that landed after this process started (or became whole again), with its bytes as just read and checked. */
  onNews(n: number, meta: RecordMeta, bytes: { record: Buffer; digest: string }): void;
  onRemoved(id: string): void;
  /** A file stopped being retried (indexed, gone, or called damaged): what a cursor may pass has moved. */
  onSettled?(): void;
  /**
   * Whether some listener here may want a record claiming this (it is then
   * checked and announced at once); any other record from another writer is
   * held unverified until a call needs it.
   */
  wanted(claims: RecordClaims): boolean;
  /** How record files are read (the disk's, unless a test counts the reads). */
  reader?: Pick<RecordReader, 'readSync' | 'readHeadSync'>;
}

export class CorpusIndexer {
  private readonly index: RecordIndex;
  private readonly shape: IdShape;
  private readonly paths: CorpusPaths;
  private readonly log: Logger;
  /** Files seen and not yet whole, being retried. */
  private readonly settling: Settling;
  /** Held files whose bytes do not match their digest. */
  private readonly damaged = new Set<number>();
  private scanned = false;
  private closed = false;
  /** The cheaper first look at a peer's record. */
  private readonly peeker: RecordPeeker;
  private readonly reader: Pick<RecordReader, 'readSync' | 'readHeadSync'>;

  constructor(private readonly options: CorpusIndexerOptions) {
    ({ index: this.index, shape: this.shape, paths: this.paths, log: this.log } = options);
    this.index.setVerifier((n) => this.verifyHeld(n));
    this.reader = options.reader ?? diskRecords;
    this.peeker = new RecordPeeker(options.shape, this.reader.readHeadSync);
    this.settling = new Settling(options.onSettled);
  }

  /**
   * Brings the index to what the disk holds at start. When the index was
   * loaded from a snapshot, only the difference is worked through: records
   * the listing has and the snapshot lacks are read, records the snapshot
   * names and the disk does not hold are dropped (the listing is how every
   * row is checked against its file: the snapshot vouches for none).
   * Otherwise every record is read.
   *
   * Reads are synchronous (see readAndIndex), so the scan hands the event
   * loop back every SCAN_BATCH files: tools/list and calls are answered
   * while a large corpus is read.
   */
  async scan(snapshot: { loaded: boolean } = { loaded: false }): Promise<{ fromSnapshot: boolean; read: number; dropped: number }> {
    const fromSnapshot = snapshot.loaded;
    const onDisk = Int32Array.from(await this.idsOnDisk()).sort();
    let toRead: ArrayLike<number> = onDisk;
    let dropped = 0;
    if (fromSnapshot) {
      const { missing, extra } = sortedDifference(onDisk, this.index.heldIds());
      toRead = missing;
      if (extra.length > 8) this.log.warn(`${extra.length} records in the index snapshot are no longer on disk; dropping them from the index (their ids are never reused)`);
      await Promise.all(extra.map((n) => this.dropIfGone(n, extra.length <= 8)));
      dropped = extra.length;
    }
    const reads: Promise<void>[] = [];
    for (let i = 0; i < toRead.length && !this.closed; i++) {
      reads.push(this.ingest(toRead[i]!, 'scan'));
      if (i % SCAN_BATCH === SCAN_BATCH - 1) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(reads); // including any file a watcher event was already reading
    this.scanned = true;
    return { fromSnapshot, read: toRead.length, dropped };
  }

  /** The ids of every file named like a record in the corpus directory now (a readdir; nothing is read). */
  idsOnDisk(): Promise<number[]> {
    return listRecordIds(this.paths.corpus, this.shape);
  }

  /**
   * Indexes the file for `n` (a record another writer published), once it is whole.
   *
   * The first look is synchronous and makes no promise, timer or map entry:
   * every process of a swarm runs this for every record any of them appends
   * (twenty processes, each woken per record), and a file published with
   * link() is whole the moment its name appears. Only a file that is not
   * whole yet (written in place, by git pull) goes on to the retries.
   */
  ingest(n: number, source: Source = 'seen'): Promise<void> {
    if (this.index.has(n) && !this.damaged.has(n)) return DONE;
    const pending = this.settling.get(n);
    if (pending) return pending;
    let first: Look = null;
    if (!this.damaged.has(n)) {
      first = this.lookOnce(n, source);
      if (first === null) return DONE;
    }
    return this.settling.start(n, () => this.readAndIndex(n, source, first));
  }

  /**
   * Indexes `n`, which another process noted in the issued log with what it parsed of the record (`hint`).
   * Lazily, a record no listener here may want is held unverified from that line alone: no file is opened
   * until a call needs it, so a swarm's servers do not each read every record. Anything else is ingested.
   */
  ingestNoted(n: number, hint: IssuedHint | undefined): Promise<void> {
    if (hint === undefined || this.closed || this.index.has(n) || this.settling.has(n) || this.damaged.has(n)) return this.ingest(n);
    // A keyed REST record's key scope needs its digest; a line without one (an older writer's) is read instead.
    if (this.options.wanted(hint.claims) || (hint.idempotencyKey !== undefined && hint.digest === undefined && boundToBytes(hint.depositedBy))) return this.ingest(n);
    this.holdUnverified(n, { ...hint, digest: hint.digest ?? '' });
    return DONE;
  }

  /**
   * The lowest id this process has seen named on disk but not yet indexed
   * (a file still being retried until it is whole), or null. A wait's cursor
   * must not pass it (spec §8a: a cursor passed back as after misses nothing).
   */
  lowestSettling(): number | null {
    return this.settling.lowest((n) => this.index.has(n));
  }

  /** Whether a file may be named for `n` now: one stat, which costs no exception where nothing is there (a look past the newest id, mostly). */
  mayBeOnDisk(n: number): boolean {
    try {
      return statSync(this.paths.record(this.shape.format(n)), { throwIfNoEntry: false }) !== undefined;
    } catch {
      return true; // let the read say what is wrong
    }
  }

  /** Whether the file for `n` is being read until it is whole. */
  isSettling(n: number): boolean {
    return this.settling.has(n);
  }

  /** Held files that do not match their digest, to be looked at again on every reconcile. */
  get hasDamaged(): boolean {
    return this.damaged.size > 0;
  }

  /** Resolves when no file is mid-read (after a reconcile, before re-deciding). */
  settled(): Promise<void> {
    return this.settling.settled();
  }

  /** The watcher named a directory entry that may have appeared or vanished. */
  noticeName(name: string): void {
    const n = this.shape.parseRecordId(name);
    if (n === null) return; // dotfiles, rsync temp names, editors' backups, READMEs
    if (!this.index.has(n)) void this.ingest(n);
    // A damaged file that changes may have just become whole (a git pull finishing): look now, not at the next listing,
    // which a loaded machine can put off for seconds (watch.ts LISTING_BUDGET).
    else if (this.damaged.has(n)) void this.ingest(n, 'recheck').then(() => this.dropIfGone(n));
    else void fs.access(this.paths.record(name)).catch(() => this.dropVanished(n));
  }

  /**
   * A full directory listing: index what is new, drop what is gone, re-check
   * what was damaged. A listing can be stale (an NFS or sshfs client's cached
   * directory, another host's write not yet visible), so a held record it
   * does not show is dropped only once lstat confirms the name is gone.
   * Resolves when those are done: true if it told news (a record not held nor being read, a held one gone).
   */
  async reconcileWith(names: string[]): Promise<boolean> {
    if (!this.scanned) return false; // the start-up scan is reading every name already
    // Two sorted id lists compared: no Set of a million numbers every listing.
    const onDisk = Int32Array.from(recordIdsIn(names, this.shape)).sort();
    const { missing, extra } = sortedDifference(onDisk, this.index.heldIds());
    const unlisted = new Set(extra);
    for (const n of [...this.damaged]) if (!unlisted.has(n)) void this.ingest(n, 'recheck');
    const found = missing.some((n) => !this.settling.has(n));
    for (const n of missing) void this.ingest(n);
    const gone = await Promise.all(extra.map((n) => this.dropIfGone(n)));
    return found || gone.includes(true);
  }

  /**
   * Drops `n` if its name is really gone (not merely missing from a
   * listing); whether it was. Also how a re-deposit of a lost record gets
   * past the index before any listing has noticed the loss: a store woken
   * by bells watches no directory.
   */
  async dropIfGone(n: number, logIt = true): Promise<boolean> {
    try {
      await fs.lstat(this.paths.record(this.shape.format(n)));
      return false;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return false;
      this.dropVanished(n, logIt);
      return true;
    }
  }

  /** The file for `n` is gone: the index reports what the disk holds (the id stays issued). */
  dropVanished(n: number, logIt = true): void {
    if (!this.index.remove(n)) return;
    this.options.keys?.forget(n);
    this.damaged.delete(n);
    const id = this.shape.format(n);
    if (logIt) this.log.warn(`${id} vanished from disk; dropped from the index (its id is never reused)`);
    this.options.onRemoved(id);
  }

  /** Stops reading: the scan ends at its next file, retries end now (their timers cleared). */
  close(): void {
    this.closed = true;
    this.settling.close();
  }

  /**
   * Adds a whole record; its metadata, or null when it was already held.
   * The metadata is built from what was just parsed, not read back out of
   * the index's columns (which would re-format its time and digest): this
   * runs in every process for every record.
   */
  add(n: number, deposit: Deposit, claims: RecordClaims): RecordMeta | null {
    if (!this.index.add(n, deposit, claims)) return null;
    if (deposit.idempotencyKey !== undefined) this.options.keys?.note(idempotencyScope(deposit.depositedBy, deposit.idempotencyKey, deposit.agent, deposit.digest, ownAnswerKey(deposit.depositedBy, deposit.agent, claims, this.shape)), n);
    return metaOf(n, deposit, claims, this.shape.format);
  }

  /**
   * One read of the file for `n`: null when there is nothing more to do
   * (indexed, gone, or the indexer closed), else what stood in the way, for
   * the retries.
   */
  private lookOnce(n: number, source: Source): Look {
    if ((this.index.has(n) && !this.damaged.has(n)) || this.closed) return null;
    const id = this.shape.format(n);
    if (source === 'seen' && !this.damaged.has(n)) {
      let peek: Peek | null;
      try {
        peek = this.peeker.look(this.paths.record(id));
      } catch {
        return null; // ENOENT: nothing there (yet)
      }
      if (peek && !this.options.wanted(peek.claims)) return this.holdUnverified(n, { claims: peek.claims, ...peek.deposit });
      // Wanted, and whole in the page it read: indexed from that read and that digest check, not from another.
      if (peek) return this.indexWhole(n, peek.deposit, peek.record, source);
    }
    let file: Buffer;
    try {
      // Synchronously: a record is small (1 MiB at most) and almost always in the page cache, and one readFileSync
      // costs a fraction of fs.promises.readFile's four thread-pool round trips (a 10k-record scan 2-6x faster).
      file = this.reader.readSync(this.paths.record(id), this.options.maxRecordBytes); // a FIFO, a symlink or a huge file named like a record is damaged
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      return { error: err };
    }
    let split: SplitFile;
    try {
      split = splitRecordFile(file);
    } catch (err) {
      return { error: err };
    }
    return this.indexWhole(n, split.deposit, split.record, source);
  }

  /** Indexes a whole, checked record (in place of a damaged entry), and announces it unless the scan found it. */
  private indexWhole(n: number, deposit: Deposit, record: Buffer, source: Source): null {
    if (this.damaged.delete(n)) {
      this.index.remove(n); // replace the damaged entry with the whole one
      this.log.info(`${this.shape.format(n)} is whole again`);
    }
    const meta = this.add(n, deposit, claimsOf(record, this.shape));
    if (meta && source !== 'scan') this.options.onNews(n, meta, { record, digest: deposit.digest });
    return null;
  }

  /** The retries after a first look that failed (`first`), or every look for a damaged file being re-checked. */
  private async readAndIndex(n: number, source: Source, first: Look): Promise<void> {
    const delays = source === 'seen' ? SETTLE_DELAYS_MS : [0];
    const lastError = await this.settling.retry(() => this.lookOnce(n, source), first ? delays.slice(1) : delays, first?.error ?? null);
    if (this.closed || lastError === null) return;
    this.holdDamaged(n, lastError);
  }

  /** Holds `n` damaged: held but not served, claiming nothing, looked at again on every reconcile. */
  private holdDamaged(n: number, error: unknown): void {
    const why = isRelayError(error) && error.details.why !== undefined ? String(error.details.why) : (error as Error).message;
    if (!this.damaged.has(n)) this.log.warn(`${this.shape.format(n)} is damaged and is held but not served: ${why}`);
    this.damaged.add(n);
    if (this.index.isUnverified(n)) this.index.verified(n, null, null);
    else this.index.add(n, null, null);
  }

  /** Holds a peer's record as its first look or its log line has it; its idempotency key is noted now (the key map must miss no record). */
  private holdUnverified(n: number, { claims, depositedBy, idempotencyKey, agent, digest }: IssuedHint & { digest: string }): null {
    if (this.index.addUnverified(n, claims) && idempotencyKey !== undefined) this.options.keys?.note(idempotencyScope(depositedBy, idempotencyKey, agent, digest, ownAnswerKey(depositedBy, agent, claims, this.shape)), n);
    return null;
  }

  /**
   * The index needs unverified record `n` checked (record-index.ts calls
   * this): read whole, digest and all, as a wanted record is at first
   * sight. Not announced: it landed before whoever asks now, and every
   * listener there was then had no use for it. Synchronous, as the first
   * look is; a file gone since is dropped, a damaged one held damaged.
   */
  private verifyHeld(n: number): void {
    let file: Buffer;
    try {
      file = this.reader.readSync(this.paths.record(this.shape.format(n)), this.options.maxRecordBytes);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return this.dropVanished(n);
      return this.holdDamaged(n, err);
    }
    try {
      const { deposit, record } = splitRecordFile(file);
      this.index.verified(n, deposit, claimsOf(record, this.shape));
    } catch (err) {
      this.holdDamaged(n, err);
    }
  }
}
