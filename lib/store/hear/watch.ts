/**
 * Noticing records that other writers put in the corpus (other server
 * processes, the CLI, rsync, git pull).
 *
 * A swarm runs twenty server processes on one corpus, so what one watcher
 * costs is paid twenty times. chokidar's default mode puts an inotify watch
 * on every file (10,001 watches for 10k records, per process), so here the
 * corpus directory itself is watched with one fs.watch (one inotify watch),
 * and a periodic readdir reconciles anything the events missed: dropped
 * events, overflowed queues, filesystems with no inotify at all (NFS), where
 * `poll` mode relies on the readdir alone.
 */
import { statSync, watch as fsWatch, type FSWatcher } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../log.js';

export type WatchMode = 'events' | 'poll' | 'none';

export interface CorpusWatcherOptions {
  dir: string;
  mode: WatchMode;
  /** Milliseconds between reconciling readdir scans (the only signal in poll mode). */
  intervalMs: number;
  /** The same on a filesystem other hosts write to (default intervalMs), where the listing is the only way to hear them. */
  sharedIntervalMs?: number;
  log: Logger;
  /** A directory entry that may have appeared or vanished. */
  onName(name: string): void;
  /**
   * The full list of names, from a readdir; a promise delays the next listing
   * until it settles. True when the listing told what nothing else had (a
   * record in a hole below the newest, a held one gone): see QUIET_LISTING_MAX_MS.
   */
  onListing(names: string[]): boolean | Promise<boolean>;
  /** Called at every interval, before any listing (hear/peers.ts: a cheap look at the issued log). */
  onTick?(): void;
  /** True when a listing is wanted even if the directory looks unchanged (damaged files to look at again). */
  mustList?(): boolean;
  /**
   * The highest id this store's writers have announced so far (the issued
   * log, as hear/peers.ts reads it). When the directory changed since the
   * last tick and this did not move, someone who announces nothing changed
   * it (rsync, git, a hand), and the tick lists it whatever the back-off.
   */
  announced?(): number;
  /** The clock listings are timed by (tests); performance.now by default. */
  now?(): number;
  /** How old (ms) the directory's times must have been at the last listing for unchanged times to be trusted; default RACY_MS. */
  racyMs?: number;
  /**
   * The path now names a different directory from the one watched (it was
   * deleted and restored, or re-cloned): handles opened on the old one must
   * be opened again.
   */
  onReplaced?(): void;
}

/** Which directory a path names: a restored copy has the same path and a new inode. */
type Identity = string | null;

/** What the directory looked like just before a full listing. */
interface Listed {
  identity: Identity;
  mtimeMs: number;
  ctimeMs: number;
  /** When it was looked at, on the same clock as mtime. */
  at: number;
}

/**
 * A directory's mtime and ctime move whenever an entry is added, removed or
 * renamed, but only by the filesystem's timestamp granularity (a few ms on
 * ext4, 1 s on some): a change in the same tick as the last look may leave
 * them equal. So unchanged times are trusted only when they were already
 * this old then.
 */
const RACY_MS = 1000;

/**
 * In events mode the periodic listing is only a safety net, and what it costs
 * grows with the corpus (a readdir of a million names and the comparison
 * with the index take ~0.5 s of CPU). So a periodic listing waits until
 * LISTING_BUDGET times the last one's cost has passed: at most ~2% of a core
 * on listings, whatever the corpus size. Poll mode lists at the interval asked.
 */
const LISTING_BUDGET = 50;

/**
 * In a busy swarm the directory changes with every record, so the mtime gate
 * (see reconcile) never holds and every server would list the whole corpus
 * at every interval: a cost that grows with the corpus and is paid by every
 * process, idle ones too (measured: an idle server beside a writer spent
 * 14-17 ms of CPU a second on a 10k-record corpus, 30-33 ms on 100k, most of
 * it these listings and their garbage). Yet there the listing almost never
 * tells anything new: every record this store's writers add is announced
 * in the issued log, and the tick (onTick) hears records that others add on
 * top of the newest id. A listing is left for what only it can see, a record
 * in a hole below the newest and a record gone. So each listing that finds
 * neither doubles the wait before the next, up to this long, while the
 * writers that announce themselves are the ones changing the directory; a
 * listing that finds something, a directory changed by no announced writer,
 * or damaged records to look at again, bring the interval back at once.
 */
export const QUIET_LISTING_MAX_MS = 32_000;

export class CorpusWatcher {
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private scanning = false;
  private missingLogged = false;
  private identity: Identity = null;
  private listed: Listed | null = null;
  private lastListing = { at: 0, costMs: 0 };
  /** What the last tick saw: the highest announced id and the directory's times. */
  private lastTick: { announced: number | undefined; look: Listed | null } = { announced: undefined, look: null };
  /** How long after the last listing the next may come while only announced writers change the directory (see QUIET_LISTING_MAX_MS). */
  private quietMs: number;
  private readonly now: () => number;
  private closed = false;
  private shared = false;
  private started = false;
  /** In events mode: whether the directory itself is watched (hear/interest.ts stops it while bells serve every listener). */
  private directoryWanted = true;

  constructor(private readonly options: CorpusWatcherOptions) {
    this.quietMs = options.intervalMs;
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Starts watching. `shared`: the corpus is on a network or FUSE filesystem
   * (filesystem.ts). Kernel events there hear only this host's writers, and
   * the directory's mtime cannot gate the listing: over SFTP it has whole
   * seconds, and an NFS client may hold an old one in its attribute cache,
   * so a directory another host added to in the same second looks
   * unchanged. There every reconcile lists, at sharedIntervalMs.
   */
  start(shared = false): void {
    const { mode } = this.options;
    if (mode === 'none' || this.closed) return;
    this.shared = shared;
    this.started = true;
    this.identity = identityOf(this.options.dir);
    if (mode === 'events' && this.directoryWanted) this.watchEvents();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** What the timer runs at every interval: the tick, then a listing if one is due. Public, and settling when done, so that a test can be the timer. */
  tick(): Promise<void> {
    this.options.onTick?.();
    // Shared: the listing is how other hosts are heard, so it is never put off. Poll mode lists at the interval asked.
    if (this.options.mode === 'events' && !this.shared && !this.listingDue()) return Promise.resolve();
    return this.reconcile();
  }

  /** Events mode, this host's writers only: whether the periodic listing may run now (reconcile still skips an unchanged directory). */
  private listingDue(): boolean {
    const announced = this.options.announced?.();
    const look = announced === undefined ? null : lookAt(this.options.dir);
    const previous = this.lastTick;
    this.lastTick = { announced, look };
    const since = this.now() - this.lastListing.at;
    if (since < this.lastListing.costMs * LISTING_BUDGET) return false;
    if (announced === undefined || since >= this.quietMs || this.options.mustList?.()) return true;
    // The directory changed since the last tick while no announced writer wrote: someone else changed it.
    return announced === previous.announced && !(look && previous.look && sameTimes(look, previous.look));
  }

  /**
   * Events mode: watch the directory (every record wakes this process) or
   * not (only the periodic listing looks; the store hears its peers some
   * other way, bells.ts). Other modes do not watch it anyway.
   */
  watchDirectory(on: boolean): void {
    if (this.options.mode !== 'events' || this.directoryWanted === on) return;
    this.directoryWanted = on;
    if (!this.started || this.closed) return;
    if (on) this.watchEvents();
    else {
      this.watcher?.close();
      this.watcher = null;
    }
  }

  /** Whether the directory is watched now (an inotify watch held). */
  get watchingDirectory(): boolean {
    return this.watcher !== null;
  }

  /** Milliseconds between listings on a shared filesystem. */
  get intervalMsWhenShared(): number {
    return this.options.sharedIntervalMs ?? this.options.intervalMs;
  }

  /** Milliseconds between listings, as started. */
  get intervalMs(): number {
    return this.shared ? (this.options.sharedIntervalMs ?? this.options.intervalMs) : this.options.intervalMs;
  }

  /**
   * One readdir, handed to onListing. Safe to call at any time; overlapping
   * calls are skipped. In events mode a directory whose identity, mtime and
   * ctime are what they were at the last listing is not listed again: on a
   * 100k-record corpus a readdir costs ~80 ms of CPU, every 2 s, in every
   * process. Poll mode, and any mode on a shared filesystem (see start),
   * always lists.
   */
  async reconcile(): Promise<void> {
    if (this.scanning || this.closed) return;
    this.scanning = true;
    try {
      const look = this.options.mode === 'events' && !this.shared ? lookAt(this.options.dir) : null;
      if (look && this.listed && unchanged(look, this.listed, this.options.racyMs ?? RACY_MS) && !this.options.mustList?.()) return;
      const started = this.now();
      const names = await fs.readdir(this.options.dir);
      const identity = identityOf(this.options.dir);
      const replaced = identity !== null && this.identity !== null && identity !== this.identity;
      if (this.missingLogged || replaced) {
        // A watch on a deleted directory hears nothing ever again: watch what is there now.
        this.options.log.info(replaced ? `the corpus directory ${this.options.dir} was replaced by another directory; watching and writing to the new ` +
          `one` : `the corpus directory ${this.options.dir} is back`);
        this.missingLogged = false;
        this.identity = identity;
        if (this.options.mode === 'events' && !this.closed && this.directoryWanted) {
          this.watcher?.close();
          this.watcher = null;
          this.watchEvents();
        }
        if (replaced) this.options.onReplaced?.();
      }
      this.identity ??= identity; // the directory was missing when watching began
      const news = await this.options.onListing(names);
      this.listed = look;
      const at = this.now();
      this.lastListing = { at, costMs: at - started };
      this.quietMs = news ? this.options.intervalMs : Math.min(this.quietMs * 2, Math.max(QUIET_LISTING_MAX_MS, this.options.intervalMs));
    } catch (err) {
      if (!this.missingLogged) {
        this.options.log.error(`cannot read the corpus directory ${this.options.dir}: ${(err as Error).message}; serving what is already indexed`);
        this.missingLogged = true;
      }
    } finally {
      this.scanning = false;
    }
  }

  /** Final: nothing is watched or listed again (a reconcile in flight does not start a new watch). */
  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private watchEvents(): void {
    try {
      const self = path.basename(this.options.dir);
      this.watcher = fsWatch(this.options.dir, { persistent: false }, (_event, name) => {
        // The directory itself was removed or renamed (the kernel names it, not an entry): look now.
        if (name === self) void this.reconcile();
        else if (typeof name === 'string') this.options.onName(name);
        else void this.reconcile(); // the kernel did not say which file: look at them all
      });
      this.watcher.on('error', (err) => {
        this.options.log.warn(`watching ${this.options.dir} failed (${err.message}); falling back to readdir every ${this.intervalMs} ms`);
        this.watcher?.close();
        this.watcher = null;
      });
    } catch (err) {
      this.options.log.warn(`cannot watch ${this.options.dir} (${(err as Error).message}); falling back to readdir every ${this.intervalMs} ms`);
    }
  }
}

function lookAt(dir: string): Listed | null {
  try {
    const stat = statSync(dir);
    return { identity: `${stat.dev}:${stat.ino}`, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, at: Date.now() };
  } catch {
    return null;
  }
}

function unchanged(now: Listed, then: Listed, racyMs: number): boolean {
  return sameTimes(now, then) && then.at - Math.max(then.mtimeMs, then.ctimeMs) > racyMs;
}

function sameTimes(now: Listed, then: Listed): boolean {
  // ctime too: rsync -a sets a directory's mtime back to the source's, but any change moves ctime.
  return now.identity === then.identity && now.mtimeMs === then.mtimeMs && now.ctimeMs === then.ctimeMs;
}

function identityOf(dir: string): Identity {
  try {
    const stat = statSync(dir);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return null;
  }
}
