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
import { RelayError, asRelayError } from './errors.js';
import { buildRecordFile, digestOf, splitRecordFile, type Provenance } from './deposit.js';
import { idShape, nextFreeId, type IdShape } from './ids.js';
import { silentLogger, type Logger } from './log.js';
import { corpusPaths, type CorpusPaths } from './paths.js';
import { DirectorySync, linkExclusive, writeTemp } from './publish.js';
import { DEFAULT_MAX_RECORD_BYTES, parseRecord, type RecordClaims } from './record.js';
import { RecordIndex, type IdState, type RecordMeta } from './record-index.js';
import { readSettings } from './settings.js';
import { clampWait, Waiters, type WaitResult } from './waiters.js';
import { CorpusWatcher, type WatchMode } from './watch.js';

export interface StoreOptions {
  corpus: string;
  maxRecordBytes?: number;
  /** Refuse appends, naming the primary (serve --read-only, or a corpus filled by `mirror`). */
  readOnly?: boolean;
  primary?: string;
  watch?: WatchMode;
  /** Milliseconds between reconciling scans of the corpus directory. */
  reconcileMs?: number;
  log?: Logger;
}

export interface AppendOptions {
  id?: string;
  depositedBy: string;
  provenance?: Provenance;
}

export interface AppendResult {
  id: string;
  digest: string;
  depositedBy: string;
  provenance: Provenance;
  depositedAt: string;
}

export interface ListResult {
  after: string | null;
  present: string[];
  knownMissing: string[];
}

export interface RepliesResult {
  parent: string;
  replies: { id: string; kind: string | null; from: string | null; to: string | null }[];
}

export interface StoreEvents {
  record: [RecordMeta];
  removed: [string];
}

/** How long a newly seen file may stay half-written (git pull writes in place) before it is called damaged. */
const SETTLE_DELAYS_MS = [0, 20, 50, 100, 200, 400, 800];
const SCAN_CONCURRENCY = 32;

export class RelayStore extends EventEmitter<StoreEvents> {
  readonly paths: CorpusPaths;
  readonly maxRecordBytes: number;
  readonly readOnly: boolean;
  readonly primary: string | undefined;
  readonly shape: IdShape;
  readonly waiters = new Waiters();

  private readonly index = new RecordIndex();
  private readonly log: Logger;
  private readonly dirSync: DirectorySync;
  private readonly watcher: CorpusWatcher;
  /** Ids this process is linking right now, so concurrent appends here do not collide. */
  private readonly reserved = new Set<number>();
  /**
   * Files being read (and, if not yet whole, retried), by id. A second look at
   * the same file joins the first instead of returning early, so the start-up
   * scan cannot finish while a watcher event or a reconcile still holds one of
   * its files.
   */
  private readonly settling = new Map<number, Promise<void>>();
  private issuedLog: Promise<fs.FileHandle> | null = null;
  private opening: Promise<void> | null = null;
  private scanned = false;
  /** Held files whose bytes do not match their digest; re-checked on every reconcile. */
  private readonly damaged = new Set<number>();
  /** The highest id in the issued log, as far as this process knows. */
  private issuedOnDisk = 0;
  private closed = false;

  /**
   * Use `RelayStore.prepare()` (or `openStore()`): it reads the store's id
   * width first, which schemas and messages need before the scan is done.
   */
  constructor(options: StoreOptions, shape: IdShape) {
    super();
    this.shape = shape;
    this.paths = corpusPaths(options.corpus);
    this.maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
    this.readOnly = options.readOnly ?? false;
    this.primary = options.primary;
    this.log = options.log ?? silentLogger;
    this.dirSync = new DirectorySync(this.paths.corpus);
    this.watcher = new CorpusWatcher({
      dir: this.paths.corpus,
      mode: options.watch ?? 'events',
      intervalMs: options.reconcileMs ?? 2000,
      log: this.log,
      onName: (name) => void this.noticeName(name),
      onListing: (names) => this.reconcileWith(names),
    });
  }

  /** Checks the corpus is there and reads its settings; cheap, and enough to describe the tools. */
  static async prepare(options: StoreOptions): Promise<RelayStore> {
    const paths = corpusPaths(options.corpus);
    try {
      if (!(await fs.stat(paths.corpus)).isDirectory()) throw new Error('not a directory');
    } catch {
      throw new RelayError('store_unavailable', `There is no corpus directory at ${paths.corpus}. Create one with \`p-e-relay init --corpus ${paths.corpus}\`, or pass --corpus with the path of an existing one.`);
    }
    const settings = await readSettings(paths.corpus);
    // A corpus that `mirror` fills has one writer, rsync; a local append would
    // shadow the primary's record of the same id forever.
    const mirrorOf = await fs.readFile(paths.mirrorMark, 'utf8').then((text) => text.trim() || 'the primary', () => null);
    if (mirrorOf !== null) options = { ...options, readOnly: true, primary: options.primary ?? mirrorOf };
    return new RelayStore(options, idShape(settings.idWidth));
  }

  /** Scans the corpus and starts watching. Repeat calls return the same promise. */
  open(): Promise<void> {
    return (this.opening ??= this.load());
  }

  /** Resolves when the start-up scan is done; calls that need the index await it. */
  get ready(): Promise<void> {
    return this.open();
  }

  get size(): number {
    return this.index.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watcher.close();
    await this.dirSync.close();
    const log = this.issuedLog;
    this.issuedLog = null;
    if (log) await (await log).close().catch(() => {});
  }

  private async load(): Promise<void> {
    if (!this.readOnly) await fs.mkdir(this.paths.tmp, { recursive: true });
    this.issuedOnDisk = await this.readIssued();
    this.index.noteIssued(this.issuedOnDisk);
    // Start watching before the scan so that nothing landing during it is missed;
    // whatever both see is indexed once.
    this.watcher.start();
    const names = await fs.readdir(this.paths.corpus);
    const ids = names.map((name) => this.shape.parseRecordId(name)).filter((n): n is number => n !== null);
    let next = 0;
    const worker = async () => {
      while (next < ids.length) await this.ingest(ids[next++]!, 'scan');
    };
    await Promise.all(Array.from({ length: Math.min(SCAN_CONCURRENCY, ids.length) }, worker));
    this.scanned = true;
    // Records brought by rsync or git are in no process's issued log; note the
    // highest now, so that if it vanishes later its id is still never reused.
    if (!this.readOnly && this.index.highest > this.issuedOnDisk) await this.noteIssuedOnDisk(this.index.highest);
    this.log.debug(`indexed ${this.index.size} records from ${this.paths.corpus}`);
  }

  // ---- the six operations -------------------------------------------------

  /** Stores one record and answers once it is durable on disk. */
  async append(bytes: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    if (this.readOnly) {
      const where = this.primary ? ` at ${this.primary}` : '';
      throw new RelayError('read_only', `This relay is a read-only mirror; it stores nothing itself. Send the record to the primary${where} instead, and it will reach this mirror with the next sync.`, { primary: this.primary ?? null });
    }
    const claims = parseRecord(bytes, this.shape, this.maxRecordBytes);
    await this.open();
    const proposed = options.id === undefined ? null : this.checkProposal(options.id);
    if (proposed !== null) await this.ensureAcceptable(proposed, bytes);

    const provenance = options.provenance ?? 'as-received';
    const depositedAt = new Date().toISOString();
    const digest = digestOf(bytes);
    const deposit = { provenance, depositedBy: options.depositedBy, depositedAt, digest };
    let temp: string;
    try {
      temp = await writeTemp(this.paths.tmp, buildRecordFile(deposit, bytes));
    } catch (err) {
      throw asRelayError(err);
    }
    try {
      const n = proposed ?? (await this.linkNextFree(temp));
      if (proposed !== null && !(await this.linkReserved(temp, n))) throw await this.heldRefusal(n, digest);
      await this.dirSync.sync();
      await this.noteIssuedOnDisk(n);
      this.indexRecord(n, deposit, claims);
      return { id: this.shape.format(n), digest, depositedBy: deposit.depositedBy, provenance, depositedAt };
    } catch (err) {
      throw asRelayError(err);
    } finally {
      await fs.unlink(temp).catch(() => {});
    }
  }

  async exists(id: string): Promise<{ id: string; state: IdState }> {
    await this.open();
    return { id, state: this.index.state(this.shape.parseRecordId(id)) };
  }

  /** The file's exact bytes (deposit header, `---`, record), its digest re-checked. */
  async read(id: string): Promise<Buffer> {
    await this.open();
    const n = this.shape.parseRecordId(id);
    if (n === null) throw this.notFound(id, 'UNKNOWN');
    let file: Buffer;
    try {
      file = await fs.readFile(this.paths.record(id));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw asRelayError(err);
      if (this.index.remove(n)) this.log.warn(`${id} vanished from disk; dropped from the index`);
      throw this.notFound(id, this.index.state(n));
    }
    try {
      splitRecordFile(file);
    } catch (err) {
      const why = err instanceof RelayError ? String(err.details.why) : (err as Error).message;
      throw new RelayError('damaged', `${id} is held but damaged (${why}), so it is not returned as if it were whole. Ask the operator to run \`p-e-relay verify\` and restore it from a mirror or from git.`, { id, state: 'PRESENT' });
    }
    if (!this.index.has(n)) void this.ingest(n, 'seen');
    return file;
  }

  async list(after?: string): Promise<ListResult> {
    await this.open();
    const mark = after === undefined ? 0 : this.parseAfter(after);
    return {
      after: after ?? null,
      present: this.index.presentAfter(mark).map(this.shape.format),
      knownMissing: this.index.knownMissingAfter(mark).map(this.shape.format),
    };
  }

  async replies(id: string): Promise<RepliesResult> {
    await this.open();
    const n = this.shape.parseRecordId(id);
    const replies = n === null ? [] : this.index.repliesTo(n).map((m) => {
      const meta = this.index.get(m)?.meta;
      return { id: this.shape.format(m), kind: meta?.kind ?? null, from: meta?.from ?? null, to: meta?.to ?? null };
    });
    return { parent: id, replies };
  }

  /** Blocks until a record lands after `after` (or, without it, after the call began), or the time runs out. */
  async wait(options: { after?: string; timeoutMs?: number; signal?: AbortSignal; onProgress?: (waitedMs: number) => void }): Promise<WaitResult> {
    const after = options.after === undefined ? null : this.parseAfter(options.after);
    // A wait with a mark answers from the index, so it needs the scan; a wait
    // for "whatever lands from now on" listens at once, even mid-scan (the
    // scan's own records are not news and wake no one).
    if (after !== null) await this.open();
    else void this.open().catch(() => {});
    return this.waiters.wait(
      { after, timeoutMs: clampWait(options.timeoutMs), signal: options.signal, onProgress: options.onProgress },
      (mark) => this.heldAfter(mark),
    );
  }

  /** Metadata of held, whole records after a mark, ascending (for waits and SSE resume). */
  heldAfter(mark: number): RecordMeta[] {
    const out: RecordMeta[] = [];
    for (const n of this.index.presentAfter(mark)) {
      const meta = this.index.get(n)?.meta;
      if (meta) out.push(meta);
    }
    return out;
  }

  private notFound(id: string, state: IdState): RelayError {
    const why =
      state === 'KNOWN_MISSING' ? 'is KNOWN_MISSING: a held record names it, but its bytes are not here'
      : state === 'PRESENT' ? 'is PRESENT but could not be read'
      : `is UNKNOWN: nothing held here mentions it (ids are ${this.shape.describe}, matched literally)`;
    return new RelayError('not_found', `${id} ${why}. Use list_relays to see which ids are held.`, { id, state });
  }

  /** Parses an `after` mark; relay-0000 means "from the start". */
  parseAfter(after: string): number {
    const n = this.shape.parse(after);
    if (n === null) {
      throw new RelayError('bad_id', `"${after}" is not an id of this store, so it cannot mark a place in id order. Send ${this.shape.describe} (e.g. ${this.shape.example}), or ${this.shape.format(0)} for the start, or leave after out.`);
    }
    return n;
  }

  // ---- appending ----------------------------------------------------------

  private checkProposal(id: string): number {
    const n = this.shape.parseRecordId(id);
    if (n === null) {
      throw new RelayError('bad_id', `"${id}" is not a record id of this store; ids are ${this.shape.describe}, compared literally (e.g. ${this.shape.example}). Send one of that shape, or leave id out and the store assigns the next free one.`);
    }
    return n;
  }

  private nextFree(): number | null {
    let highest = this.index.highest;
    for (const r of this.reserved) if (r > highest) highest = r;
    return nextFreeId(highest, (n) => this.index.isKnownMissing(n), this.shape.max);
  }

  /**
   * A proposal is taken when it is not held and either KNOWN_MISSING (a lost
   * record being re-deposited) or not beyond the next free id. A proposal
   * further ahead would let one call reserve the whole id space.
   */
  private async ensureAcceptable(n: number, bytes: Uint8Array): Promise<void> {
    for (let fresh = false; ; fresh = true) {
      if (this.index.has(n)) throw await this.heldRefusal(n, digestOf(bytes));
      const next = this.nextFree();
      if (this.index.isKnownMissing(n) || n <= (next ?? this.shape.max)) return;
      if (fresh) {
        const nextText = next === null ? 'none: the id space is used up' : this.shape.format(next);
        throw new RelayError('id_ahead', `${this.shape.format(n)} is beyond the next free id (${nextText}); a proposal may fill a gap or take the next free id, not reserve ids ahead. Leave id out to take the next free one.`, { nextFree: next === null ? null : this.shape.format(next) });
      }
      await this.watcher.reconcile(); // our view may be stale: another process may have moved on
      await this.settled();
    }
  }

  private async linkNextFree(temp: string): Promise<number> {
    for (;;) {
      const n = this.nextFree();
      if (n === null) {
        throw new RelayError('ids_exhausted', `This store has used every id up to ${this.shape.format(this.shape.max)} and cannot take another record. Start a new store, or create one with a wider id (\`p-e-relay init --id-width ${this.shape.width + 1}\`).`);
      }
      if (await this.linkReserved(temp, n)) return n;
      // Another writer took it first: remember, and read what it names before
      // trying the one after, or we could hand an id it made KNOWN_MISSING to
      // an unrelated record.
      this.index.noteIssued(n);
      await this.ingest(n, 'seen');
    }
  }

  private async linkReserved(temp: string, n: number): Promise<boolean> {
    this.reserved.add(n);
    try {
      return await linkExclusive(temp, this.paths.record(this.shape.format(n)));
    } finally {
      this.reserved.delete(n);
    }
  }

  private async heldRefusal(n: number, digest: string): Promise<RelayError> {
    const id = this.shape.format(n);
    let identical: boolean | null = null;
    try {
      identical = splitRecordFile(await fs.readFile(this.paths.record(id))).deposit.digest === digest;
    } catch {
      identical = null;
    }
    const said =
      identical === true ? 'and its bytes are identical to yours (same digest), so an earlier call of yours most likely landed: there is nothing to resend'
      : identical === false ? 'by a record with different bytes'
      : 'by a record that could not be read back to compare';
    return new RelayError('id_held', `${id} is already held, ${said}. Records are never overwritten; leave id out to take the next free id.`, { id, identical });
  }

  /** The high-water log: ids issued here, so a record that vanishes never hands its id to a new one. */
  private async readIssued(): Promise<number> {
    let text = '';
    try {
      text = await fs.readFile(this.paths.issued, 'utf8');
    } catch {
      return 0;
    }
    let highest = 0;
    for (const line of text.split('\n')) {
      const n = this.shape.parseRecordId(line);
      if (n !== null && n > highest) highest = n;
    }
    return highest;
  }

  private async noteIssuedOnDisk(n: number): Promise<void> {
    // Small O_APPEND writes are atomic, so every process can share one log.
    // It is not fsynced: after a power cut the record itself is on disk and
    // the start-up scan sees it; the log only matters for files that vanish later.
    // A failure here must not turn a published record into a refusal (the
    // caller would retry and deposit it twice), so it is logged, not thrown.
    try {
      this.issuedLog ??= fs.open(this.paths.issued, 'a');
      await (await this.issuedLog).write(`${this.shape.format(n)}\n`);
      if (n > this.issuedOnDisk) this.issuedOnDisk = n;
    } catch (err) {
      this.issuedLog = null;
      this.log.warn(`could not note ${this.shape.format(n)} in ${this.paths.issued} (${(err as Error).message}); the record itself is stored`);
    }
  }

  // ---- the index ----------------------------------------------------------

  private indexRecord(n: number, deposit: ReturnType<typeof splitRecordFile>['deposit'], claims: RecordClaims | null, news = true): void {
    if (!this.index.add(n, deposit, claims, this.shape.format)) return;
    if (!news) return;
    const meta = this.index.get(n)!.meta!;
    this.waiters.notify(n, meta);
    this.emit('record', meta);
  }

  private noticeName(name: string): void {
    const n = this.shape.parseRecordId(name);
    if (n === null) return; // dotfiles, rsync temp names, editors' backups, READMEs
    if (!this.index.has(n)) void this.ingest(n, 'seen');
    else void fs.access(this.paths.record(name)).catch(() => this.dropVanished(n));
  }

  private reconcileWith(names: string[]): void {
    if (!this.scanned) return; // the start-up scan is reading every name already
    const onDisk = new Set<number>();
    for (const name of names) {
      const n = this.shape.parseRecordId(name);
      if (n === null) continue;
      onDisk.add(n);
      // A damaged file may have been mid-write (git pull) or restored since: look again.
      if (!this.index.has(n)) void this.ingest(n, 'seen');
      else if (this.damaged.has(n)) void this.ingest(n, 'recheck');
    }
    for (const n of [...this.index.heldIds()]) if (!onDisk.has(n)) this.dropVanished(n);
  }

  private dropVanished(n: number): void {
    if (this.index.remove(n)) {
      const id = this.shape.format(n);
      this.log.warn(`${id} vanished from disk; dropped from the index (its id is never reused)`);
      this.emit('removed', id);
    }
  }

  /** Waits until no file is mid-ingest (after a reconcile, before re-deciding). */
  private async settled(): Promise<void> {
    while (this.settling.size > 0) await new Promise((r) => setTimeout(r, 5));
  }

  /**
   * Reads a file that appeared and indexes it once its digest checks out. A
   * file written in place by another tool can be caught half-written, so a
   * failing check is retried briefly before the file is called damaged.
   */
  private ingest(n: number, source: IngestSource): Promise<void> {
    if (this.index.has(n) && !this.damaged.has(n)) return Promise.resolve();
    let pending = this.settling.get(n);
    if (!pending) {
      pending = this.readAndIndex(n, source).finally(() => this.settling.delete(n));
      this.settling.set(n, pending);
    }
    return pending;
  }

  /**
   * A file the start-up scan finds was there before this process; one seen
   * later is news (it wakes waiters and streams) and may still be being
   * written by git, so it gets the settling retries.
   */
  private async readAndIndex(n: number, source: IngestSource): Promise<void> {
    const id = this.shape.format(n);
    const delays = source === 'seen' ? SETTLE_DELAYS_MS : [0];
    let lastError: unknown = null;
    for (const delay of delays) {
      if (delay) await new Promise((r) => setTimeout(r, delay));
      if ((this.index.has(n) && !this.damaged.has(n)) || this.closed) return;
      let file: Buffer;
      try {
        file = await fs.readFile(this.paths.record(id));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        lastError = err;
        continue;
      }
      try {
        const { deposit, record } = splitRecordFile(file);
        this.index.remove(n); // a damaged entry being re-checked
        this.indexRecord(n, deposit, claimsOf(record, this.shape), source !== 'scan');
        if (this.damaged.delete(n)) this.log.info(`${id} is whole again`);
        return;
      } catch (err) {
        lastError = err;
      }
    }
    if (!this.damaged.has(n)) this.log.warn(`${id} is damaged and is held but not served: ${(lastError as Error).message}`);
    this.damaged.add(n);
    this.index.add(n, null, null, this.shape.format);
  }
}

type IngestSource = 'scan' | 'seen' | 'recheck';

/** A stored record's claims; one that no longer parses still counts as held, just with nothing claimed. */
function claimsOf(record: Buffer, shape: IdShape): RecordClaims {
  try {
    return parseRecord(record, shape, Infinity);
  } catch {
    return { kind: null, from: null, to: null, parent: null, named: [] };
  }
}

export async function openStore(options: StoreOptions): Promise<RelayStore> {
  const store = await RelayStore.prepare(options);
  await store.open();
  return store;
}
