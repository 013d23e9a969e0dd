/**
 * The store: one corpus directory, append-only, one immutable file per record.
 *
 * It is the single core every door calls (MCP tools, REST routes, the CLI):
 * append, exists, read, list, replies, wait. It keeps an in-memory index
 * built by scanning the corpus at open, then fed by its own appends and by a
 * watcher that notices records other writers add.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs/promises';
import { RelayError, asRelayError, damagedRecord, isRelayError } from '../errors.js';
import { buildRecordFile, digestOf, splitRecordFile, type Deposit, type Provenance } from '../model/deposit.js';
import { aheadRefusal, highestMark } from './follow/after-mark.js';
import { AppendOnce } from './append/keyed-append.js';
import { CorpusIndexer } from './index/corpus-indexer.js';
import { IdempotencyClaims } from './append/idempotency-claims.js';
import { checkIdempotencyKey, IdempotencyKeys, idempotencyScope } from '../model/idempotency-keys.js';
import { IdAllocator } from './append/id-allocator.js';
import { idShape, type IdShape } from '../model/ids.js';
import { IssuedLog } from './append/issued-log.js';
import { silentLogger, type Logger } from '../log.js';
import { corpusPaths, type CorpusPaths } from '../disk/paths.js';
import { filesystemFacts, type FilesystemFacts } from '../disk/filesystem.js';
import { DirectorySync, writeTemp } from '../disk/publish.js';
import { lostMountRefusal, TempLeftovers } from '../disk/lost-mount.js';
import { DEFAULT_MAX_RECORD_BYTES, parseRecord, type RecordClaims } from '../model/record.js';
import { NotARecordFile, readRecordFile, recordSizeOf } from '../disk/record-file.js';
import { DEFAULT_CONCURRENT_READS, ReadGate } from './read-gate.js';
import { RecordIndex, type IdState, type RecordMeta } from '../model/record-index.js';
import { matches, parseRecipients, type RecordFilter } from '../model/filter.js';
import { inlineBytes } from './follow/inline-bytes.js';
import { readSettings } from '../disk/settings.js';
import { SnapshotKeeper } from './index/snapshot-keeper.js';
import { ensureStore } from './store-mark.js';
import { subscribe, type HeldRecord, type OnRecord, type RecordFeed, type StoreEvents, type SubscribeOptions, type Subscription } from './follow/subscription.js';
import { appeared, clampWait, WAIT_MAX_ITEMS, Waiters, type AppearedRecord, type WaitResult } from './hear/waiters.js';
import { CorpusWatcher, type WatchMode } from './hear/watch.js';
import { Bells, bellsFor, bellsOf, type BellKey } from './hear/bells.js';
import { readOnlyRefusal } from './append/read-only.js';
import { namedAppend, statedAgentOf } from './agents/named-append.js';
import { AgentDeliveries } from './agents/deliveries.js';
import { unknownRecipient } from '../model/agent-name.js';
import { countsAsAnswer, isQuestion } from '../model/answer-count.js';
import type { RosterEntry } from './agents/roster.js';

/** How often a store lists a corpus other hosts write to, unless --poll says otherwise. */
const SHARED_LISTING_MS = 1000;

/** Ids a catch-up takes from the index at a time (eachHeldAfter). */
const HELD_BATCH = 1024;

export interface StoreOptions {
  corpus: string;
  maxRecordBytes?: number;
  /** Record files read at once at most (lib/store/read-gate.ts); more wait their turn. */
  concurrentReads?: number;
  /** Refuse appends, naming the primary (serve --read-only, or a corpus filled by `mirror`). */
  readOnly?: boolean;
  primary?: string;
  watch?: WatchMode;
  /** Milliseconds between reconciling scans of the corpus directory. */
  reconcileMs?: number;
  /**
   * Events mode: let listeners that filter on `to` or `replies_to` hear
   * their records by doorbells instead of by watching the directory
   * (bells.ts; default true). False watches the directory always, as
   * before bells: the bench measures one against the other.
   */
  bells?: boolean;
  /** A named channel's append whose to: names someone not on the roster is refused unknown_recipient (SPEC §8d). */
  strictRecipients?: boolean;
  /**
   * Hold a record another writer added unverified, from a header read,
   * until a call needs it checked (default true; corpus-indexer.ts). False
   * checks every record when it is first seen: the eager index, kept for
   * the differential test and the bench's comparison.
   */
  lazyIndex?: boolean;
  /** How long another host's idempotency claim may stand still before it is presumed dead (tests shorten it). */
  claimStaleMs?: number;
  /** How long to wait for another process's first index snapshot, and when its lock is stale (snapshot-build.ts; tests shorten them). */
  buildWait?: { maxWaitMs?: number; staleMs?: number };
  log?: Logger;
}

export interface AppendOptions {
  id?: string;
  depositedBy: string;
  provenance?: Provenance;
  /** SPEC §8b: at most one record per (depositedBy, key), ever. */
  idempotencyKey?: string;
  /**
   * The agent the channel serves (SPEC §8d), or absent for an unnamed one.
   * Its record's from: must name it, and where `depositedBy` does not carry
   * the name already (stdio's plain `mcp`) the deposit header states it.
   */
  agent?: string;
}

export interface AppendResult {
  id: string;
  digest: string;
  depositedBy: string;
  provenance: Provenance;
  depositedAt: string;
  /** Present only where the filesystem cannot make the new name durable (sshfs): what is and is not on disk. */
  durability?: string;
  /** Present when an earlier append with the same idempotency key stored this record. */
  replayed?: true;
  /** A named channel's append: the to: names no one on the roster has (SPEC §8d); absent when there are none. */
  unknownRecipients?: string[];
}

export interface WaitOptions {
  after?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (waitedMs: number) => void;
  filter?: RecordFilter | null;
  /** Inline each record's bytes and digest, up to INLINE_BYTES_BUDGET in one answer. */
  includeBytes?: boolean;
  /** At most this many items in one answer (default WAIT_MAX_ITEMS, every door's); the cursor is then the last of them (waiters.ts). */
  limit?: number;
  /** A test beside the filter (a named agent's marks: lib/store/agents/deliveries.ts). */
  match?: (meta: RecordMeta, n: number) => boolean;
}

export interface ListResult {
  after: string | null;
  present: string[];
  knownMissing: string[];
}

/** ListResult's ids as numbers (`shape.format` makes them ids). */
export interface ListIds {
  after: string | null;
  present: number[];
  knownMissing: number[];
}

export interface RepliesResult {
  parent: string;
  /** Receipts: the named recipients of the record who have had it delivered (SPEC §8d); absent where no recipient has marks. */
  deliveredTo?: string[];
  /** Each with its thread links, so a caller tells an answer (parent is the id) from a citation (refs holds it). */
  replies: AppearedRecord[];
}

/** The lifecycle, in the manner of hypercore's ready-resource. */
export type StoreState = 'prepared' | 'opening' | 'open' | 'closing' | 'closed';

export class RelayStore extends EventEmitter<StoreEvents> implements RecordFeed {
  readonly paths: CorpusPaths;
  readonly maxRecordBytes: number;
  /** Caps the record files open for reading at once (an amplification guard; docs/security.md). */
  private readonly reads: ReadGate;
  readonly readOnly: boolean;
  readonly primary: string | undefined;
  readonly shape: IdShape;
  readonly waiters = new Waiters(this);
  /** A named agent's marks and deliveries (SPEC §8d). */
  readonly agents: AgentDeliveries;
  /** Refuse a named append to a name not on the roster (serve --strict-recipients). */
  private readonly strictRecipients: boolean;

  private readonly index: RecordIndex;
  private readonly log: Logger;
  private readonly dirSync: DirectorySync;
  private readonly watcher: CorpusWatcher;
  private readonly indexer: CorpusIndexer;
  private readonly ids: IdAllocator;
  private readonly issued: IssuedLog;
  private readonly snapshots: SnapshotKeeper;
  private lifecycle: StoreState = 'prepared';
  private readonly keys = new IdempotencyKeys();
  private readonly keyed: AppendOnce;
  private opening: Promise<void> | null = null;
  /** The start-up scan is done: the index holds every record that was on disk. */
  private indexed = false;
  private closing: Promise<void> | null = null;
  /** Appends under way; close lets them finish before it closes the handles they write through. */
  private readonly appending = new Set<Promise<unknown>>();
  /** Set on a filesystem that cannot make a directory entry durable (filesystem.ts). */
  private entryNotDurable: string | null = null;
  /** The corpus is on a filesystem other hosts may write (filesystem.ts), and that filesystem's name. */
  private sharedFs = false;
  private fsType = 'local';
  /** Temp files a lost mount kept this process from removing (lost-mount.ts). */
  private readonly leftovers: TempLeftovers;
  /** Rung on every append (null on a read-only store, which appends nothing). */
  private readonly bells: Bells | null;
  /** Listeners with `to`/`replies_to` filters hear their records by bells, not by the directory (decided at open). */
  private byBells = false;
  private readonly wantBells: boolean;
  private readonly buildWait: { maxWaitMs?: number; staleMs?: number };
  /** Every subscription's interest: the bells that cover its filter, or null for every record. */
  private readonly interests = new Set<Listener>();
  /** The directory stays watched this long after its last listener for every record leaves. */
  private directoryLinger: NodeJS.Timeout | null = null;
  /** Every id up to here has been looked for on disk, in order, by hearPeers. */
  private probedUpTo = 0;

  /**
   * Use `RelayStore.prepare()` (or `openStore()`): it reads the store's id
   * width first, which schemas and messages need before the scan is done.
   */
  constructor(options: StoreOptions, shape: IdShape) {
    super();
    // Every blocked wait and open stream listens for 'record'.
    this.setMaxListeners(0);
    this.shape = shape;
    this.index = new RecordIndex(shape.format);
    this.paths = corpusPaths(options.corpus);
    this.maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
    this.reads = new ReadGate(options.concurrentReads ?? DEFAULT_CONCURRENT_READS);
    this.readOnly = options.readOnly ?? false;
    this.primary = options.primary;
    this.log = options.log ?? silentLogger;
    this.dirSync = new DirectorySync(this.paths.corpus);
    this.leftovers = new TempLeftovers(this.paths.tmp, this.log);
    this.bells = this.readOnly ? null : new Bells(this.paths.bells, this.log, () => this.hearPeers(0, LOOK_PAST));
    this.buildWait = options.buildWait ?? {};
    this.wantBells = (options.bells ?? true) && (options.watch ?? 'events') === 'events' && !this.readOnly;
    this.issued = new IssuedLog(this.paths.issued, shape, this.log);
    this.indexer = new CorpusIndexer({
      index: this.index,
      shape,
      paths: this.paths,
      log: this.log,
      keys: this.keys,
      maxRecordBytes: this.maxRecordBytes,
      onNews: (n, meta) => this.announce(n, meta),
      onRemoved: (id) => {
        this.snapshots.noteChange();
        this.emit('removed', id);
      },
      onSettled: () => this.releaseHeld(),
      wanted: (options.lazyIndex ?? true) ? (claims) => this.someListenerWants(claims) : undefined,
    });
    this.snapshots = new SnapshotKeeper(this.index, shape, () => this.sharedFs, this.keys, this.paths, () => this.issued.highest, this.log);
    this.watcher = new CorpusWatcher({
      dir: this.paths.corpus,
      mode: options.watch ?? 'events',
      intervalMs: options.reconcileMs ?? 2000,
      log: this.log,
      onName: (name) => this.indexer.noticeName(name),
      onListing: (names) => {
        // Whatever the listing shows, the ids below it are looked at first and in order, so no cursor passes one.
        this.hearPeers(highestIdIn(names, shape));
        return this.indexer.reconcileWith(names);
      },
      mustList: () => this.indexer.hasDamaged,
      // Where bells serve, records for nobody here are read a batch at a time, not in the path of the next answer.
      onTick: () => this.hearPeers(0, LOOK_PAST),
      onReplaced: () => void this.reattach(),
      sharedIntervalMs: options.reconcileMs ?? SHARED_LISTING_MS,
    });
    this.ids = new IdAllocator(
      this.index,
      this.indexer,
      shape,
      this.paths,
      async () => {
        await this.watcher.reconcile();
        await this.indexer.settled();
      },
      () => this.sharedFs,
    );
    const claims = new IdempotencyClaims(this.paths.idempotency, this.paths.tmp, this.log, options.claimStaleMs, (file, err, creating) => this.leftovers.note(file, err, creating));
    // A reconcile may be skipped (one already running, a directory that looks
    // unchanged); taking over a dead writer's key must see every file.
    const readAll = async () => {
      for (const n of await this.indexer.idsOnDisk()) if (!this.index.has(n)) await this.indexer.ingest(n);
    };
    this.agents = new AgentDeliveries(this, { marks: this.paths.marks, roster: this.paths.roster }, this.log);
    this.strictRecipients = options.strictRecipients ?? false;
    this.keyed = new AppendOnce({ keys: this.keys, claims, shape, paths: this.paths, refresh: readAll, dropIfGone: (n) => this.indexer.dropIfGone(n) });
  }

  /** Checks the corpus is there and reads its settings; cheap, and enough to describe the tools. */
  static async prepare(options: StoreOptions): Promise<RelayStore> {
    const paths = corpusPaths(options.corpus);
    try {
      if (!(await fs.stat(paths.corpus)).isDirectory()) throw new Error('not a directory');
    } catch {
      throw new RelayError('store_unavailable', `There is no corpus directory at ${paths.corpus}. Create one with \`p-e-relay init --corpus ${paths.corpus}\`, or pass --corpus with the path of an existing one.`);
    }
    await ensureStore(paths.corpus, options.readOnly === true); // any directory is not a corpus (store-mark.ts)
    const settings = await readSettings(paths.corpus);
    // A corpus that `mirror` fills has one writer, rsync; a local append would
    // shadow the primary's record of the same id forever.
    const mirrorOf = await fs.readFile(paths.mirrorMark, 'utf8').then((text) => text.trim() || 'the primary', () => null);
    if (mirrorOf !== null) options = { ...options, readOnly: true, primary: options.primary ?? mirrorOf };
    return new RelayStore(options, idShape(settings.idWidth));
  }

  /**
   * Scans the corpus and starts watching. Repeat calls return the same
   * promise; after close it is refused.
   */
  open(): Promise<void> {
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') return this.refusedOpen();
    if (this.opening) return this.opening;
    this.lifecycle = 'opening';
    this.opening = this.load().then(
      () => {
        if (this.lifecycle === 'opening') this.lifecycle = 'open';
      },
      (err) => {
        void this.snapshots.releaseBuild(); // an open that failed builds nothing: let the waiters go
        throw this.lifecycle === 'opening' ? err : this.closedRefusal();
      },
    );
    return this.opening;
  }

  /** Resolves when the start-up scan is done; calls that need the index await it. */
  get ready(): Promise<void> {
    return this.open();
  }

  /** prepared → opening → open → closing → closed; a store never opens again once it closes. */
  get state(): StoreState {
    return this.lifecycle;
  }

  get size(): number {
    return this.index.size;
  }

  /** Records held unverified now, from a first look (a lazy index: corpus-indexer.ts); the tests and the bench read it. */
  get unverified(): number {
    return this.index.unverifiedCount;
  }

  /** The highest id held now (0 for none): where a new agent mark's broadcasts begin. */
  get head(): number {
    return this.index.highestHeld();
  }

  /**
   * Ends every blocked wait and open stream with the closed refusal, waits
   * for an open in progress and for appends under way, then tears down
   * everything open started: the watcher (fs.watch and its interval), the
   * indexer's settle timers, the directory handle and the issued log.
   * Safe to call more than once: every call returns the same promise.
   */
  close(): Promise<void> {
    return (this.closing ??= this.shutDown());
  }

  private async shutDown(): Promise<void> {
    this.lifecycle = 'closing';
    this.emit('closed', this.closedRefusal());
    // Stop the scan and the watcher now; an open in progress sees the state and stops at its next step.
    this.indexer.close();
    this.watcher.close();
    const bellsClosed = this.bells?.close();
    if (this.directoryLinger) clearTimeout(this.directoryLinger);
    await this.opening?.catch(() => {});
    await Promise.allSettled([...this.appending]);
    this.watcher.close();
    await this.indexer.settled();
    await this.snapshots.close();
    await this.agents.roster.close();
    await this.dirSync.close();
    await this.issued.close();
    await this.leftovers.close();
    await bellsClosed; // nothing is written under .state/bells/ or bell-holders/ after close
    this.lifecycle = 'closed';
  }

  /** Throws the closed refusal once close() has been called. */
  private refuseIfClosed(): void {
    if (this.lifecycle === 'closing' || this.lifecycle === 'closed') throw this.closedRefusal();
  }

  /** Every operation starts here: refused after close, else waits for the scan. */
  private async opened(): Promise<void> {
    this.refuseIfClosed();
    await this.open();
    this.refuseIfClosed();
    this.hearPeers();
  }

  private refused: Promise<void> | null = null;

  /** What open() answers once close() has been called (marked handled: nobody may be waiting). */
  private refusedOpen(): Promise<void> {
    if (!this.refused) {
      this.refused = Promise.reject(this.closedRefusal());
      this.refused.catch(() => {});
    }
    return this.refused;
  }

  private closedRefusal(): RelayError {
    return new RelayError('store_unavailable', `The relay's store at ${this.paths.corpus} has closed (the server is shutting down), so this call was not carried out. Call again once the server is running; a wait can be repeated with the same after mark.`, { reason: 'closed' });
  }

  private async load(): Promise<void> {
    const facts = await this.checkFilesystem();
    if (!this.readOnly) await fs.mkdir(this.paths.tmp, { recursive: true });
    // A swarm starting on a corpus with no snapshot: one process reads every
    // record, the others wait for its snapshot; so before the issued log is read,
    // which that process notes the corpus's highest id in (snapshot-build.ts).
    await this.snapshots.takeTurn(async () => (await this.indexer.idsOnDisk()).length, () => this.lifecycle !== 'opening', this.buildWait);
    this.refuseIfClosed();
    const issuedBefore = await this.issued.read();
    this.index.noteIssued(issuedBefore);
    this.refuseIfClosed();
    // What a process before this one read, if it left a snapshot that holds
    // together; the scan then reads only what the snapshot lacks.
    const snapshot = await this.snapshots.load();
    this.refuseIfClosed();
    // Start watching before the scan so that nothing landing during it is missed;
    // whatever both see is indexed once. Where bells serve, records landing
    // during the scan are in the issued log, read after it (hearPeers).
    this.byBells = this.wantBells && !facts.shared;
    this.watcher.watchDirectory(!this.byBells);
    this.watcher.start(facts.shared);
    for (const listener of this.interests) void this.arm(listener);
    const scan = await this.indexer.scan(snapshot);
    this.indexed = true;
    this.probedUpTo = this.index.highest;
    this.refuseIfClosed();
    this.hearPeers();
    // Records brought by rsync or git are in no process's issued log; note the
    // highest now, so that if it vanishes later its id is still never reused.
    if (!this.readOnly && this.index.highest > issuedBefore) await this.issued.note(this.index.highest);
    this.snapshots.afterScan(scan);
    this.log.debug(`indexed ${this.index.size} records from ${this.paths.corpus} (${snapshot.loaded ? `snapshot${snapshot.unchanged ? ', directory unchanged since' : ''}, then ${scan.read} read and ${scan.dropped} dropped` : `${scan.read} read`})`);
  }

  /**
   * A corpus on a network or FUSE filesystem (several hosts may write it):
   * say so, listen by listing, refuse to write where listings are known to
   * be stale, and do not call an append durable where it is not (docs/scaling.md).
   */
  private async checkFilesystem(): Promise<FilesystemFacts> {
    const facts = await filesystemFacts(this.paths.corpus);
    this.sharedFs = facts.shared;
    this.fsType = facts.type;
    if (!facts.shared) return facts;
    if (facts.cachedListings && !this.readOnly) throw new RelayError('store_unavailable', `This server cannot write to the corpus safely: ${facts.cachedListings}`);
    this.log.info(`the corpus ${this.paths.corpus} is on ${facts.type}, which other hosts may write: their records are found by listing it every ${this.watcher.intervalMsWhenShared} ms (--poll MS sets it)`);
    if (facts.cachedListings) this.log.warn(facts.cachedListings);
    if (facts.unknownListings) this.log.warn(facts.unknownListings);
    if (facts.entryNotDurable && !this.readOnly) {
      this.entryNotDurable = `on ${facts.type} ${facts.entryNotDurable}`;
      this.log.warn(`appends are not fully durable here: ${this.entryNotDurable}`);
    }
    return facts;
  }

  /**
   * The corpus path now names another directory (deleted and restored, or
   * re-cloned without .state/): sync and log into the new one, recreate its
   * temp directory, and carry the high-water mark over so that no id issued
   * here is handed out again by any process.
   */
  private async reattach(): Promise<void> {
    this.dirSync.reopen();
    this.issued.reopen();
    this.bells?.rearmAll();
    if (this.readOnly || this.lifecycle !== 'open') return;
    try {
      await fs.mkdir(this.paths.tmp, { recursive: true });
    } catch (err) {
      this.log.warn(`cannot create ${this.paths.tmp} in the new corpus directory (${(err as Error).message}); appends will be refused until it can be`);
    }
    if (this.index.highest > 0) await this.issued.note(this.index.highest);
  }

  // ---- the six operations -------------------------------------------------

  /** Stores one record and answers once it is durable on disk (or, where it cannot be, says so in the answer). */
  append(bytes: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    const appending = this.appendOnce(bytes, options);
    this.appending.add(appending);
    void appending.catch(() => {}).finally(() => this.appending.delete(appending));
    return appending;
  }

  private async appendOnce(bytes: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    this.refuseIfClosed();
    if (this.readOnly) throw readOnlyRefusal(this.primary);
    const claims = parseRecord(bytes, this.shape, this.maxRecordBytes);
    const named = namedAppend(claims, options, this.shape);
    options = named.options;
    const key = options.idempotencyKey === undefined ? undefined : checkIdempotencyKey(options.idempotencyKey);
    await this.opened();
    const parentAuthor = claims.parent === null ? null : (this.index.get(claims.parent)?.meta?.from ?? null);
    const unknown = options.agent === undefined ? [] : await this.agents.unknownRecipients(claims.to, parentAuthor);
    if (unknown.length > 0 && this.strictRecipients) throw unknownRecipient(unknown);
    const digest = digestOf(bytes);
    const proposed = options.id === undefined ? null : this.ids.parseProposal(options.id);
    let result: AppendResult;
    try {
      result =
        key === undefined
          ? await this.appendNew(bytes, claims, digest, proposed, options)
          : await this.keyed.run(idempotencyScope(options.depositedBy, key, named.statedAgent), key, digest, proposed, () => this.appendNew(bytes, claims, digest, proposed, options));
    } catch (err) {
      throw this.appendRefusal(err); // the key's claim meets a lost mount too
    }
    return unknown.length > 0 ? { ...result, unknownRecipients: unknown } : result;
  }

  /** Everyone on the roster (SPEC §8d): names that served, signed or were given a key, when last seen, waiting now. */
  roster(): Promise<RosterEntry[]> {
    return this.agents.roster.entries();
  }

  private async appendNew(bytes: Uint8Array, claims: RecordClaims, digest: string, proposed: number | null, options: AppendOptions): Promise<AppendResult> {
    if (proposed !== null) await this.ids.checkProposal(proposed, digest);
    const provenance = options.provenance ?? 'as-received';
    const deposit: Deposit = { provenance, depositedBy: options.depositedBy, depositedAt: new Date().toISOString(), digest };
    if (options.idempotencyKey !== undefined) deposit.idempotencyKey = options.idempotencyKey;
    const statedAgent = statedAgentOf(options);
    if (statedAgent !== undefined) deposit.agent = statedAgent;
    let temp: string;
    try {
      temp = await this.writeTemp(buildRecordFile(deposit, bytes));
    } catch (err) {
      throw this.appendRefusal(err);
    }
    let linked: number | null = null;
    try {
      const n = proposed === null ? await this.ids.linkNextFree(temp) : await this.ids.linkProposed(temp, proposed, digest);
      linked = n;
      // The record is visible from here on: ring now, so waiters read it while
      // this process makes it durable. They find it by looking past the highest
      // id they know; a re-deposit below that is found in the log, so it rings
      // once noted there.
      const fillIn = proposed !== null && n <= this.index.highest;
      if (!fillIn) this.bells?.ring(bellsOf(claims));
      await this.dirSync.sync();
      await this.issued.note(n);
      if (fillIn) this.bells?.ring(bellsOf(claims));
      // Every id below is indexed first (or known absent), so a cursor that covers this one misses none of them.
      this.hearPeers(n - 1, ONLY_BELOW);
      const meta = this.indexer.add(n, deposit, claims);
      if (meta) this.announce(n, meta);
      const result: AppendResult = { id: this.shape.format(n), digest, depositedBy: deposit.depositedBy, provenance, depositedAt: deposit.depositedAt };
      if (this.entryNotDurable) result.durability = this.entryNotDurable;
      return result;
    } catch (err) {
      // Linked, then a later step failed: the record is on disk all the same; index it from there.
      if (linked !== null) await this.indexer.ingest(linked).catch(() => {});
      throw this.appendRefusal(err);
    } finally {
      if (linked !== null) {
        this.ids.indexed(linked);
        this.releaseHeld();
      }
      await fs.unlink(temp).catch((err) => this.leftovers.note(temp, err));
    }
  }

  /** What an append's failure tells its caller: a lost mount by name (safe to retry under its key), else its code. */
  private appendRefusal(err: unknown): RelayError {
    return lostMountRefusal(err, { corpus: this.paths.corpus, type: this.fsType }, this.sharedFs) ?? asRelayError(err);
  }

  /**
   * Writes the temp file. `.state/` may have been removed under us (`git
   * clean -x` removes what .gitignore names) or not be there yet in a
   * restored copy: make it again and retry once. Never the corpus itself: a
   * corpus that is gone stays a refusal, not a fresh empty directory.
   */
  private async writeTemp(file: Buffer): Promise<string> {
    try {
      return await writeTemp(this.paths.tmp, file, undefined, (left, err, creating) => this.leftovers.note(left, err, creating));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      for (const dir of [this.paths.state, this.paths.tmp]) {
        await fs.mkdir(dir).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
      }
      this.log.info(`${this.paths.tmp} was missing; made it again`);
      return await writeTemp(this.paths.tmp, file);
    }
  }

  async exists(id: string): Promise<{ id: string; state: IdState }> {
    await this.opened();
    return { id, state: this.index.state(this.shape.parseRecordId(id)) };
  }

  /** The file's exact bytes (deposit header, `---`, record), its digest re-checked. */
  async read(id: string): Promise<Buffer> {
    await this.opened();
    const n = this.shape.parseRecordId(id);
    if (n === null) throw this.notFound(id, 'UNKNOWN');
    let file: Buffer;
    try {
      file = await this.reads.run(() => readRecordFile(this.paths.record(id), this.maxRecordBytes));
    } catch (err) {
      if (err instanceof NotARecordFile) throw damagedRecord(err.why, id);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw asRelayError(err);
      this.indexer.dropVanished(n);
      throw this.notFound(id, this.index.state(n));
    }
    try {
      splitRecordFile(file);
    } catch (err) {
      throw isRelayError(err) && err.code === 'damaged' ? damagedRecord(String(err.details.why), id) : asRelayError(err);
    }
    if (!this.index.has(n)) this.hearPeers(n);
    return file;
  }


  /**
   * Held and KNOWN_MISSING ids after a mark. A filter selects held records;
   * a missing id has no headers, so with a filter the missing list is empty.
   */
  async list(after?: string, filter: RecordFilter | null = null): Promise<ListResult> {
    const ids = await this.listIds(after, filter);
    return { after: ids.after, present: ids.present.map(this.shape.format), knownMissing: ids.knownMissing.map(this.shape.format) };
  }

  /**
   * The same ids as numbers, none formatted yet: a door that refuses a
   * list past a size (list_relays) counts before it formats. At 1M,
   * formatting the million ids of a list it then refused took 1.1 CPU-s.
   */
  async listIds(after?: string, filter: RecordFilter | null = null): Promise<ListIds> {
    await this.opened();
    const mark = after === undefined ? 0 : await this.markOf(after, true);
    return { after: after ?? null, present: this.index.matchingAfter(mark, filter), knownMissing: filter ? [] : this.index.knownMissingAfter(mark) };
  }

  async replies(id: string): Promise<RepliesResult> {
    await this.opened();
    const n = this.shape.parseRecordId(id);
    // A wait item's fields (the listing says so), but never bytes or answers; a damaged record claims nothing, so names nothing.
    const replies = n === null ? [] : this.index.repliesTo(n).flatMap((m) => {
      const meta = this.index.get(m)?.meta;
      return meta ? [appeared(meta)] : [];
    });
    const asked = n === null ? undefined : this.index.get(n)?.meta;
    const deliveredTo = asked ? await this.agents.deliveredTo(n!, asked.to, asked.from) : null;
    return deliveredTo === null ? { parent: id, replies } : { parent: id, replies, deliveredTo };
  }

  /** Blocks until a record lands after `after` (or, without it, after the call began), or the time runs out. */
  /**
   * Blocks until a record matching `filter` lands after `after` (or, without
   * it, after the call began), or the time runs out. Records the filter
   * rejects wake nothing, but the answer's cursor moves past them.
   */
  async wait(options: WaitOptions): Promise<WaitResult & { cursor: string }> {
    // A wait with a mark answers from the index, so it needs the scan. A wait
    // for "whatever lands from now on" listens at once, even mid-scan, and
    // lists the corpus so that files already there when it began (which this
    // process may notice a moment later) are not reported as new.
    let existing: Promise<ReadonlySet<number>> | undefined;
    this.refuseIfClosed();
    const after = options.after === undefined ? null : await this.markOf(options.after);
    if (after === null) {
      void this.open().then(() => this.hearPeers(), () => {});
      existing = this.indexer.idsOnDisk().then((ids) => new Set(ids));
    }
    const result = await this.waiters.wait({
      after,
      timeoutMs: clampWait(options.timeoutMs),
      signal: options.signal,
      onProgress: options.onProgress,
      existing,
      filter: options.filter,
      match: options.match,
      limit: options.limit ?? WAIT_MAX_ITEMS,
      cursor: (atLeast, caughtUp) => this.cursorAfter(after, atLeast, caughtUp),
      refresh: () => this.hearPeers(0, LOOK_PAST),
    });
    for (const item of result.appeared) if (isQuestion(item.kind)) item.answers = this.answersTo(item.id);
    if (options.includeBytes) result.appeared = await inlineBytes(result.appeared, (id) => this.read(id), (id) => this.reads.run(() => recordSizeOf(this.paths.record(id), this.maxRecordBytes)));
    return { ...result, cursor: result.cursor! };
  }

  /**
   * How many held answers `id` has (lib/model/answer-count.ts: later, and by
   * their own author where the channel knows it). On a wait's
   * question items, so that an agent sees a broadcast question already
   * answered without a list_replies call per question (its recipe answers a
   * to: all question only while none is).
   */
  private answersTo(id: string): number {
    const n = this.shape.parseRecordId(id);
    if (n === null) return 0;
    let answers = 0;
    for (const m of this.index.repliesTo(n)) {
      const meta = this.index.get(m)?.meta;
      if (meta && countsAsAnswer(n, id, m, meta)) answers++;
    }
    return answers;
  }

  /**
   * A wait's cursor, read the moment it answers: every record held up to
   * here was considered (answered, or not for this caller), so the highest
   * held id. Until the start-up scan is done, held records below that may
   * still be unread: a wait with a mark then keeps its mark.
   */
  private cursorAfter(after: number | null, atLeast: number, caughtUp: boolean): string {
    // Cut short before its catch-up was sent, or before the scan: the mark stays, raised only by what was answered.
    if (after !== null && (!caughtUp || !this.indexed)) return this.shape.format(Math.max(after, atLeast));
    return this.shape.format(Math.max(after ?? 0, atLeast, Math.min(this.index.highestHeld(), this.announcedUpTo())));
  }

  /** Every record at or below this has been announced (or was there at the scan): below the first one still held back. */
  private announcedUpTo(): number {
    let upTo = this.visibleUpTo();
    for (const { n } of this.held) if (n - 1 < upTo) upTo = n - 1;
    return upTo;
  }

  /**
   * The highest id a cursor may cover: every id at or below it that this
   * process knows to exist is indexed. An id this process linked and has not
   * indexed yet (an append in flight), or a file it saw named and is still
   * reading until it is whole, stops it one below. Records above it are held
   * back from waits and streams until it passes them (`releaseHeld`), so
   * that a cursor passed back as `after` misses nothing (SPEC §8a). Both
   * holds are bounded: an append's own dirSync and log note, a file's
   * settle retries (under 2 s), and neither outlives this process.
   */
  private visibleUpTo(): number {
    const unindexed = this.ids.lowestUnindexed();
    const settling = this.indexer.lowestSettling();
    const lowest = unindexed === null ? settling : settling === null ? unindexed : Math.min(unindexed, settling);
    return lowest === null ? Infinity : lowest - 1;
  }

  /**
   * Follows the records this store holds: the held ones after `after` first
   * (once the index is built), then each one that lands, once. The one
   * subscription API; waits and event streams are built on it.
   */
  subscribe(options: SubscribeOptions, onRecord: OnRecord): Subscription {
    this.refuseIfClosed();
    return subscribe(this, options, onRecord);
  }

  /**
   * A subscription's interest, until the returned function is called: with
   * bells, one filtered on `to` or `replies_to` is woken by its bells only
   * (bells.ts), and the directory is watched only while some listener wants
   * every record (and for DIRECTORY_LINGER_MS after, so that a caller
   * looping on unfiltered waits does not start and stop a watch per call).
   * Then looks at once for anything peers added (hearPeers).
   */
  listen(filter: RecordFilter | null): () => void {
    const listener: Listener = { filter, keys: bellsFor(filter), release: null };
    this.interests.add(listener);
    // The look comes once the bells are heard from: a record landing while they were set up is found by it.
    void this.arm(listener).then(() => {
      if (this.interests.has(listener)) this.hearPeers(0, LOOK_PAST);
    });
    return () => {
      if (!this.interests.delete(listener)) return;
      listener.release?.();
      if (listener.keys === null) this.directoryWanted();
    };
  }

  /** Bells and directory watches in use now (inotify watches; tests and the bench read it). */
  get listening(): { bells: number; directory: boolean } {
    return { bells: this.bells?.watched ?? 0, directory: this.watcher.watchingDirectory };
  }

  private stopping(): boolean {
    return this.lifecycle === 'closing' || this.lifecycle === 'closed';
  }

  private async arm(listener: Listener): Promise<void> {
    if (!this.byBells || this.stopping()) return; // the directory hears everything
    if (listener.keys === null) return this.directoryWanted();
    if (listener.release || listener.arming) return;
    listener.arming = true;
    let release: (() => void) | null = null;
    try {
      release = await this.bells!.listen(listener.keys);
    } catch (err) {
      this.log.warn(`cannot listen by bells in ${this.paths.bells} (${(err as Error).message}); watching the corpus directory instead`);
    } finally {
      listener.arming = false;
    }
    // It ended, or the store began closing, while its bells were set up.
    if (!this.interests.has(listener) || this.stopping()) return release?.();
    listener.release = release;
    if (listener.release) return;
    // No bells for it (past this process's watches, or they failed): the directory hears it.
    listener.keys = null;
    this.directoryWanted();
  }

  /** Watches the directory while a listener wants every record; stops DIRECTORY_LINGER_MS after the last leaves. */
  private directoryWanted(): void {
    if (!this.byBells) return;
    if (this.wantsEveryRecord()) {
      if (this.directoryLinger) clearTimeout(this.directoryLinger);
      this.directoryLinger = null;
      this.watcher.watchDirectory(true);
      return;
    }
    if (this.directoryLinger || !this.watcher.watchingDirectory) return;
    this.directoryLinger = setTimeout(() => {
      this.directoryLinger = null;
      if (!this.wantsEveryRecord()) this.watcher.watchDirectory(false);
    }, DIRECTORY_LINGER_MS);
    this.directoryLinger.unref();
  }

  /** Whether a record claiming this may be for some listener here now (a lazy index checks and announces it at once). */
  private someListenerWants(claims: RecordClaims): boolean {
    if (this.interests.size === 0) return false;
    const record = { kind: claims.kind, from: claims.from, recipients: parseRecipients(claims.to), named: claims.named };
    for (const listener of this.interests) if (matches(listener.filter, record)) return true;
    return false;
  }

  /** Some listener here has no bells to cover it (unfiltered, or filtered on from/kind only). */
  private wantsEveryRecord(): boolean {
    for (const listener of this.interests) if (listener.keys === null) return true;
    return false;
  }

  /**
   * Indexes what peers (this store's other processes) have added since this
   * process last looked: the issued log says how far ids have gone, and
   * every id up to there (or up to `upTo`) not held yet is looked for on
   * disk, in id order. Synchronous, and one stat when nothing is new, so it
   * runs before every operation, on every ring, and before an append or a
   * listing indexes a higher id: a record is then never indexed while a
   * lower one that exists is not, which is what lets a cursor trust the
   * highest held id without a watch on the directory. `how` says whether
   * to read the log and whether to look past the highest id (LOOK_PAST).
   */
  private hearPeers(upTo = 0, how: { log: boolean; past: boolean } = { log: true, past: false }): void {
    if (!this.indexed || this.lifecycle === 'closing' || this.lifecycle === 'closed') return;
    const noted = how.log ? this.issued.readNew() : [];
    // Only below: up to upTo exactly (the highest may already count the append's own id).
    let top = how.log ? Math.max(this.index.highest, upTo) : upTo;
    for (const n of noted) {
      if (n > top) top = n;
      // A re-deposit fills in an id below what was looked at: the log is how it is heard.
      else if (n <= this.probedUpTo && !this.index.has(n)) void this.indexer.ingest(n);
    }
    let from = this.probedUpTo + 1;
    if (top - from >= MAX_PROBE) {
      // An id far ahead (a file dropped in by hand): the listing finds what lies between.
      this.log.warn(`ids jumped from ${this.shape.format(this.probedUpTo)} to ${this.shape.format(top)}; looking at the newest ${MAX_PROBE} only, the next listing finds the rest`);
      from = top - MAX_PROBE + 1;
    }
    for (let n = from; n <= top; n++) if (!this.index.has(n)) void this.indexer.ingest(n);
    // A writer rings as soon as its record is linked, before it notes the id
    // in the log: ids are issued densely, so look on past the top until a
    // name is not there (one failed open when nothing is new).
    for (const last = how.past ? top + MAX_PROBE : top; top < last; top++) {
      const n = top + 1;
      void this.indexer.ingest(n);
      if (!this.index.has(n) && !this.indexer.isSettling(n)) break;
    }
    if (top > this.probedUpTo) this.probedUpTo = top;
  }

  /** Held, whole records after a mark that match `filter`, ascending (a subscription's catch-up). */
  heldAfter(mark: number, filter: RecordFilter | null = null): HeldRecord[] {
    return [...this.eachHeldAfter(mark, filter)];
  }

  /**
   * The same, one at a time: a catch-up that stops early (a wait at its
   * item cap) builds the metadata of no more records than it sends. From
   * relay-0000000 at 1M, building all of them first took ~4.7 CPU-s and
   * ~800 MB for an answer of 10,000.
   */
  *eachHeldAfter(mark: number, filter: RecordFilter | null = null): Generator<HeldRecord> {
    const upTo = this.announcedUpTo(); // what lies above is announced live once visible
    // In batches from the index, each after the last id taken: a catch-up of a
    // million records never holds a million ids, and records indexed meanwhile
    // (announced live) cannot shift it.
    for (let from = mark; ; ) {
      const batch = this.index.matchingAfter(from, filter, HELD_BATCH);
      for (const n of batch) {
        if (n > upTo) return;
        const meta = this.index.get(n)?.meta;
        if (meta) yield { n, meta };
      }
      if (batch.length < HELD_BATCH) return;
      from = batch[batch.length - 1]!;
    }
  }

  /** The mark after which the held records matching `filter` are the newest `count` (`tail -n`). */
  markBeforeNewest(count: number, filter: RecordFilter | null = null): number {
    return this.index.markBeforeNewest(count, filter);
  }

  /** Whether held record `n` matches `filter` (SPEC §8a), from the index. */
  matches(n: number, filter: RecordFilter | null): boolean {
    return this.index.matches(n, filter);
  }

  /**
   * An `after` mark every door takes (waits, listings, streams): parsed, then
   * refused `id_ahead` past the newest id this store has issued (after-mark.ts),
   * once the scan is done. A mark on a file that is on disk but not heard yet
   * (a peer's record linked a moment ago) is not ahead. A listing's mark may
   * also be at or below a cited id (`listing`): its known-missing list goes on
   * from there (list_relays' too_large names such an after).
   */
  async markOf(after: string, listing = false): Promise<number> {
    const n = this.parseAfter(after);
    await this.opened();
    const top = { newestHeld: this.index.highestHeld(), highWater: this.index.highest };
    if (n <= highestMark(top) || (listing && this.index.missingFrom(n))) return n;
    if (await fs.access(this.paths.record(this.shape.format(n))).then(() => true, () => false)) return n;
    throw aheadRefusal(n, top, this.shape);
  }

  /** Parses an `after` mark (its shape only; markOf also checks it against the store); relay-0000 means "from the start". */
  parseAfter(after: string): number {
    const n = this.shape.parse(after);
    if (n === null) {
      throw new RelayError('bad_id', `"${after}" is not an id of this store, so it cannot mark a place in id order. Send ${this.shape.describe} (e.g. ${this.shape.example}), or ${this.shape.format(0)} for the start, or leave after out.`);
    }
    return n;
  }

  /**
   * A record landed (here or by another writer): every subscription hears of
   * it, in id order once it is visible (visibleUpTo); until then it waits in
   * `held`.
   */
  private announce(n: number, meta: RecordMeta): void {
    this.snapshots.noteChange();
    if (this.held.length === 0 && n <= this.visibleUpTo()) this.emit('record', meta, n);
    else {
      this.held.push({ n, meta });
      this.releaseHeld();
    }
  }

  /** Records indexed above what was visible, ascending by id once released. */
  private held: HeldRecord[] = [];

  /** Announces the held records that are visible now, lowest id first. */
  private releaseHeld(): void {
    if (this.held.length === 0) return;
    const upTo = this.visibleUpTo();
    this.held.sort((a, b) => a.n - b.n);
    let released = 0;
    while (released < this.held.length && this.held[released]!.n <= upTo) released++;
    if (released === 0) return;
    const out = this.held.splice(0, released);
    for (const { n, meta } of out) this.emit('record', meta, n);
  }

  private notFound(id: string, state: IdState): RelayError {
    const why =
      state === 'KNOWN_MISSING' ? 'is KNOWN_MISSING: a held record names it, but its bytes are not here'
      : state === 'PRESENT' ? 'is PRESENT but could not be read'
      : `is UNKNOWN: nothing held here mentions it (ids are ${this.shape.describe}, matched literally)`;
    return new RelayError('not_found', `${id} ${why}. List the held ids with list_relays (GET /relays, or \`p-e-relay ls\`).`, { id, state });
  }
}

/** A subscription's interest: the bells that cover its filter (null: every record), and how to stop listening to them. */
interface Listener {
  filter: RecordFilter | null;
  keys: BellKey[] | null;
  release: (() => void) | null;
  /** Its bells are being set up (Bells.listen has not resolved). */
  arming?: boolean;
}

const DIRECTORY_LINGER_MS = 10_000;
/**
 * How hearPeers looks. Past the highest issued id only where a record may
 * have been rung before its id was noted (a ring, the tick, a wait starting
 * or answering): it costs a failed open, so not before every operation.
 * Only below `upTo`, no log, for an append about to index its own record:
 * the log holds nothing it needs, and the look past would read that record.
 */
const LOOK_PAST = { log: true, past: true };
const ONLY_BELOW = { log: false, past: false };
/** At most this many ids looked for on disk in one hearPeers. */
const MAX_PROBE = 20_000;

/** The highest id a directory listing names, or 0. */
function highestIdIn(names: readonly string[], shape: IdShape): number {
  let highest = 0;
  for (const name of names) {
    const n = shape.parseRecordId(name);
    if (n !== null && n > highest) highest = n;
  }
  return highest;
}

export async function openStore(options: StoreOptions): Promise<RelayStore> {
  const store = await RelayStore.prepare(options);
  await store.open();
  return store;
}
