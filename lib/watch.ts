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
import { watch as fsWatch, type FSWatcher } from 'node:fs';
import fs from 'node:fs/promises';
import type { Logger } from './log.js';

export type WatchMode = 'events' | 'poll' | 'none';

export interface CorpusWatcherOptions {
  dir: string;
  mode: WatchMode;
  /** Milliseconds between reconciling readdir scans (the only signal in poll mode). */
  intervalMs: number;
  log: Logger;
  /** A directory entry that may have appeared or vanished. */
  onName(name: string): void;
  /** The full list of names, from a readdir. */
  onListing(names: string[]): void;
}

export class CorpusWatcher {
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private scanning = false;
  private missingLogged = false;

  constructor(private readonly options: CorpusWatcherOptions) {}

  start(): void {
    const { mode, intervalMs } = this.options;
    if (mode === 'none') return;
    if (mode === 'events') this.watchEvents();
    this.timer = setInterval(() => void this.reconcile(), intervalMs);
    this.timer.unref();
  }

  /** One readdir, handed to onListing. Safe to call at any time; overlapping calls are skipped. */
  async reconcile(): Promise<void> {
    if (this.scanning) return;
    this.scanning = true;
    try {
      const names = await fs.readdir(this.options.dir);
      if (this.missingLogged) {
        this.options.log.info(`the corpus directory ${this.options.dir} is back`);
        this.missingLogged = false;
        if (this.options.mode === 'events' && !this.watcher) this.watchEvents();
      }
      this.options.onListing(names);
    } catch (err) {
      if (!this.missingLogged) {
        this.options.log.error(`cannot read the corpus directory ${this.options.dir}: ${(err as Error).message}; serving what is already indexed`);
        this.missingLogged = true;
      }
    } finally {
      this.scanning = false;
    }
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private watchEvents(): void {
    try {
      this.watcher = fsWatch(this.options.dir, { persistent: false }, (_event, name) => {
        if (typeof name === 'string') this.options.onName(name);
        else void this.reconcile(); // the kernel did not say which file: look at them all
      });
      this.watcher.on('error', (err) => {
        this.options.log.warn(`watching ${this.options.dir} failed (${err.message}); falling back to readdir every ${this.options.intervalMs} ms`);
        this.watcher?.close();
        this.watcher = null;
      });
    } catch (err) {
      this.options.log.warn(`cannot watch ${this.options.dir} (${(err as Error).message}); falling back to readdir every ${this.options.intervalMs} ms`);
    }
  }
}
