/**
 * Doorbells: waking only the processes a record is for.
 *
 * A swarm is twenty server processes on one corpus, each blocked in a wait
 * for what is addressed to its own agent. Watching the corpus directory
 * wakes all twenty for every record, and a wake costs a process far more
 * than reading the record later with others (measured: 0.28 ms of CPU per
 * record per woken process, against ~0.05 ms for a record read in a batch),
 * so most of a swarm's CPU went into waking processes that found nothing
 * for themselves.
 *
 * So every writer of this store also rings a bell per recipient, and per
 * record a record replies to: an empty file under `.state/bells/` whose
 * times it touches. A process whose listeners all filter on `to` (or on
 * `replies_to`) watches just those files: one inotify watch per name, and
 * it wakes only for the records that can match. A bell is a hint, never the
 * truth: on a ring the store reads what is new from the issued log and the
 * index decides what matches, so a spurious ring (two names sharing a
 * hash, a record naming several recipients) costs a look and nothing else.
 *
 * Ringing costs one utimes() per bell, and nothing for a name nobody has
 * ever listened to: its file does not exist, and ENOENT is the whole answer.
 * A listener makes the file before it watches it. Bells live in `.state/`
 * because they are this machine's: a writer on another host rings nothing
 * here, which is why a shared filesystem never relies on them (opening.ts).
 *
 * Watches are the user's, not the process's (fs.inotify.max_user_watches is
 * shared by every process of that user), so they are bounded: a filter names
 * at most 64 names (model/filter.ts), and one process watches at most
 * `maxWatched` bells. Past that, lingering bells are let go first, and then a
 * listener is refused bells (listen answers null) and its store watches the
 * directory instead, which hears every record at the cost of one watch. A
 * bell this process made and nobody ever rang is removed when it is let go,
 * so names nobody writes to leave no files behind; the bells of a process
 * that died without letting go are swept by the next one (bell-holders.ts).
 *
 * Setting bells up is asynchronous: making a file costs ~0.2 ms on a busy disk
 * (64 fresh names took 12–60 ms made synchronously, on a shared 2-core machine),
 * so files are made on libuv's threads and only the watch (~27 µs a bell) runs
 * on the event loop. Whoever listens looks for what is new once listen()
 * resolves (hear/interest.ts), so nothing landing meanwhile is missed.
 */
import { statSync, unlinkSync, utimesSync, truncateSync, watch, type FSWatcher, constants as fsc } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../log.js';
import { bellFile, bellName, type BellKey } from './bell-keys.js';
import { BellHolders, sweepBells } from './bell-holders.js';

interface Listening {
  watcher: FSWatcher | null;
  listeners: number;
  /** Set while nobody listens: the watch is kept this long for the next wait of a loop. */
  idle: NodeJS.Timeout | null;
  /** Set while the bell is being made again after its file was removed. */
  retry: NodeJS.Timeout | null;
  /** The file's mtime when this process made it (null: it was there already): unchanged when let go, nobody rang it. */
  madeAt: number | null;
  /** Settles once the bell is made and watched, or could not be; what is done after letting go waits for it. */
  armed: Promise<void>;
  /** Whether `armed` has settled (close() removes what it may only then). */
  settled: boolean;
}

/**
 * A bell nobody listens to any more is still watched this long: an agent's
 * loop releases its bells between one wait and the next, and making and
 * watching them again each call costs half a dozen system calls.
 */
const BELL_LINGER_MS = 10_000;
/** A removed bell is made again after this long, and tried this many times (5 s in all). */
const REARM_DELAY_MS = 20;
const REARM_ATTEMPTS = 250;
/** A bell removed between being made and watched (a sweep, rm -r .state/) is made again this many times. */
const MAKE_ATTEMPTS = 3;
/** The most bells one process watches by default: 16 agents' 8 waits and 4 streams of two names each, 8 times over. */
export const DEFAULT_MAX_BELLS = 1024;

export interface BellsOptions {
  /** At most this many bells watched at once, lingering ones included. */
  maxWatched?: number;
  /** How long a bell nobody listens to any more stays watched. */
  lingerMs?: number;
}

export class Bells {
  private readonly listening = new Map<BellKey, Listening>();
  private closed = false;
  private ringFailure: string | null = null;
  private readonly maxWatched: number;
  private readonly lingerMs: number;
  private saidFull = false;
  private readonly holders: BellHolders;
  private sweep: Promise<void> | null = null;
  /** Disk work under way: bells being set up, let go, swept. close() waits for it, so nothing is written after. */
  private readonly inFlight = new Set<Promise<unknown>>();

  /** `onRing` runs on every ring of a bell someone here listens to (and when a bell had to be made again). */
  constructor(
    private readonly dir: string,
    private readonly log: Logger,
    private readonly onRing: () => void,
    options: BellsOptions = {},
  ) {
    this.maxWatched = options.maxWatched ?? DEFAULT_MAX_BELLS;
    this.lingerMs = options.lingerMs ?? BELL_LINGER_MS;
    this.holders = new BellHolders(dir);
  }

  /** Rings each bell that someone has made; never throws (the record is stored already). */
  ring(keys: readonly BellKey[]): void {
    if (keys.length === 0) return;
    const now = new Date();
    for (const key of keys) {
      const file = bellFile(this.dir, key);
      try {
        utimesSync(file, now, now);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') continue; // nobody has ever listened for it
        // Setting times needs ownership; another user's bell is rung by writing to it.
        if (code === 'EPERM' || code === 'EACCES') {
          try {
            truncateSync(file, 0);
            continue;
          } catch {}
        }
        if (this.ringFailure !== code) this.log.warn(`could not ring ${file} (${(err as Error).message}); waiters elsewhere will hear this record at their next look`);
        this.ringFailure = code ?? 'unknown';
      }
    }
  }

  /**
   * Listens to these bells until the returned function is called; they are
   * heard from when this resolves. Null when they would take this process
   * past its watches (lingering bells let go first), and rejects when a bell
   * cannot be made or watched: either way the caller listens to the
   * directory instead. The first listen sweeps the bells of dead processes.
   */
  async listen(keys: readonly BellKey[]): Promise<(() => void) | null> {
    const wanted = new Set(keys);
    if (!this.makeRoom(wanted)) return null;
    void this.swept();
    const taken = [...wanted].map((key) => [key, this.take(key)] as const);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const [key, entry] of taken) this.release(key, entry);
    };
    const failed = (await Promise.allSettled(taken.map(([, entry]) => entry.armed))).find((r) => r.status === 'rejected');
    if (failed || this.closed) release();
    if (failed) throw failed.reason;
    return this.closed ? null : release;
  }

  /** Sweeps, once per instance and in the background, the bells held by nobody alive (bell-holders.ts). */
  swept(): Promise<void> {
    return (this.sweep ??= this.track(sweepBells(this.dir, Date.now(), () => this.closed)).then(
      ({ holders, bells }) => {
        if (holders + bells > 0) this.log.info(`doorbells: removed ${bells} bell file(s) nobody holds and the holders of ${holders} process(es) that are gone`);
      },
      (err: unknown) => this.log.debug(`could not sweep ${this.dir} (${(err as Error).message})`),
    ));
  }

  /** Whether `wanted` fits under the cap, letting lingering bells go to make room; says so once when it does not. */
  private makeRoom(wanted: ReadonlySet<BellKey>): boolean {
    let fresh = 0;
    for (const key of wanted) if (!this.listening.has(key)) fresh++;
    let over = this.listening.size + fresh - this.maxWatched;
    for (const [key, entry] of this.listening) {
      if (over <= 0) break;
      if (entry.listeners > 0 || wanted.has(key)) continue;
      this.letGo(key, entry);
      over--;
    }
    if (over <= 0) return true;
    if (!this.saidFull) this.log.warn(`this process watches ${this.listening.size} doorbells, its most (${this.maxWatched}); further filtered waits here are woken by the corpus directory instead`);
    this.saidFull = true;
    return false;
  }

  /**
   * Stops watching a bell; once its setting up has settled, removes its file
   * when this process made it and nobody rang it since (at once when closing,
   * since the process may exit next), and its holder's marker.
   */
  private letGo(key: BellKey, entry: Listening, closing = false): void {
    entry.watcher?.close();
    entry.watcher = null;
    if (entry.idle) clearTimeout(entry.idle);
    if (entry.retry) clearTimeout(entry.retry);
    if (this.listening.get(key) === entry) this.listening.delete(key);
    if (closing && entry.settled) return removeIfUnrungNow(bellFile(this.dir, key), entry.madeAt);
    this.track(
      entry.armed
        .catch(() => {})
        .then(async () => {
          if (this.listening.has(key)) return; // listened to again meanwhile: its file and marker are in use
          await removeIfUnrung(bellFile(this.dir, key), entry.madeAt);
          await this.holders.drop(bellName(key));
        }),
    );
  }

  /** Resolves once the disk work begun so far is done: bells set up, or let go with their files and markers removed (tests count files after it). */
  async tidied(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    void work.catch(() => {}).finally(() => this.inFlight.delete(work));
    return work;
  }

  /** Bells watched now, lingering ones included (inotify watches this costs). */
  get watched(): number {
    return this.listening.size;
  }

  /** The directory they live in was replaced (opening.ts, reattach): watch the new one's files. */
  rearmAll(): void {
    for (const [key, entry] of this.listening) this.rearm(key, entry);
  }

  /**
   * Lets every bell go. What can be removed at once is (the process may exit
   * next); the promise settles once the work under way is done too, and the
   * markers are gone, so nothing is written under `.state/` after it.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const [key, entry] of [...this.listening]) this.letGo(key, entry, true);
    this.holders.dropAll();
    await this.tidied();
    this.holders.dropAll(); // a marker being written as close began
  }

  /** One more listener for `key`: the bell's entry, set up now unless it is already. */
  private take(key: BellKey): Listening {
    const known = this.listening.get(key);
    if (known) {
      known.listeners++;
      if (known.idle) clearTimeout(known.idle);
      known.idle = null;
      return known;
    }
    const entry: Listening = { watcher: null, listeners: 1, idle: null, retry: null, madeAt: null, armed: Promise.resolve(), settled: false };
    this.listening.set(key, entry);
    entry.armed = this.track(this.watchBell(key, entry)).then(
      () => void (entry.settled = true),
      (err: unknown) => {
        entry.settled = true;
        // Not kept as a failed entry: the next listener tries afresh.
        if (this.listening.get(key) === entry) this.letGo(key, entry);
        throw err;
      },
    );
    return entry;
  }

  private release(key: BellKey, entry: Listening): void {
    if (this.listening.get(key) !== entry || --entry.listeners > 0) return;
    entry.idle = setTimeout(() => {
      if (entry.listeners > 0 || this.listening.get(key) !== entry) return;
      this.letGo(key, entry);
    }, this.lingerMs);
    entry.idle.unref();
  }

  /** Marks the bell held here, makes its file if it is not there, and watches it (unless let go meanwhile). */
  private async watchBell(key: BellKey, entry: Listening): Promise<void> {
    const name = bellName(key);
    const file = path.join(this.dir, name);
    // The marker first: a sweep that read the markers before it sees a bell made within its grace.
    if (this.closed) return;
    await this.holders.hold(name);
    for (let attempt = 1; ; attempt++) {
      if (this.closed || this.listening.get(key) !== entry) return;
      const madeAt = await makeFile(file);
      if (madeAt !== null) entry.madeAt = madeAt;
      if (this.closed || this.listening.get(key) !== entry) return;
      try {
        entry.watcher = watch(file, { persistent: false }, (event) => {
          // 'rename': the file was removed (.state/ cleaned, a sweep): make it again, and look, since a ring may have been lost.
          if (event === 'rename') this.rearm(key, entry);
          else this.onRing();
        });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && attempt < MAKE_ATTEMPTS) continue; // removed since it was made
        throw err;
      }
      entry.watcher.on('error', () => this.rearm(key, entry));
      return;
    }
  }

  /**
   * Watches a bell again once its file is gone. A moment later, so that a
   * removal in progress (rm -r .state/) finishes first instead of meeting
   * the file made again; and again until it can be made, for a while.
   */
  private rearm(key: BellKey, entry: Listening, attempt = 0): void {
    entry.watcher?.close();
    entry.watcher = null;
    if (entry.retry) clearTimeout(entry.retry);
    entry.retry = setTimeout(() => {
      entry.retry = null;
      if (this.closed || this.listening.get(key) !== entry || entry.watcher) return;
      entry.settled = false;
      entry.armed = this.track(this.watchBell(key, entry)).then(
        () => {
          entry.settled = true;
          this.onRing();
        },
        (err: unknown) => {
          entry.settled = true;
          if (attempt < REARM_ATTEMPTS) return this.rearm(key, entry, attempt + 1);
          this.log.warn(`cannot watch the bell for ${key} again (${(err as Error).message}); its waits are woken by the next listing`);
          this.onRing();
        },
      );
    }, REARM_DELAY_MS);
    entry.retry.unref();
  }
}

/** Removes a bell this process made if nobody rang it since (its mtime is still the one it was made with). */
async function removeIfUnrung(file: string, madeAt: number | null): Promise<void> {
  if (madeAt === null) return;
  try {
    if ((await fs.stat(file)).mtimeMs === madeAt) await fs.unlink(file);
  } catch {
    // gone already, or not ours to remove: a stray file costs a ring nothing
  }
}

/** removeIfUnrung, at once: at close the process may exit before a promise settles. */
function removeIfUnrungNow(file: string, madeAt: number | null): void {
  if (madeAt === null) return;
  try {
    if (statSync(file).mtimeMs === madeAt) unlinkSync(file);
  } catch {
    // as above
  }
}

/** Makes a bell's file (and its directory) unless it is there; its mtime when this call made it, else null. */
async function makeFile(file: string, madeDir = false): Promise<number | null> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o666);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return null;
    if (code !== 'ENOENT' || madeDir) throw err;
    await fs.mkdir(path.dirname(file), { recursive: true });
    return makeFile(file, true);
  }
  try {
    return (await handle.stat()).mtimeMs;
  } finally {
    await handle.close();
  }
}
