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
 * here, which is why a shared filesystem never relies on them (store.ts).
 */
import { mkdirSync, openSync, closeSync, utimesSync, truncateSync, watch, type FSWatcher, constants as fsc } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import type { RecordFilter } from '../model/filter.js';
import { parseRecipients } from '../model/filter.js';

const crypto = process.getBuiltinModule('node:crypto') as typeof import('node:crypto');

/** What a bell stands for: `to:NAME` (a recipient) or `re:N` (a record replied to). */
export type BellKey = string;

/** The bells a record rings: its recipients, and the records it names in parent:/ref:. */
export function bellsOf(claims: { to: string | null; named: readonly number[] }): BellKey[] {
  return [...parseRecipients(claims.to).map((name) => `to:${name}`), ...claims.named.map((n) => `re:${n}`)];
}

/**
 * The bells that hear every record a filter can match, or null when no set
 * of bells does (no `to` and no `replies_to`: only the directory hears them all).
 * Filters combine with AND, so one of them covering the record is enough.
 */
export function bellsFor(filter: RecordFilter | null | undefined): BellKey[] | null {
  if (filter?.to) return [...filter.to].map((name) => `to:${name}`);
  if (filter?.repliesTo !== undefined) return [`re:${filter.repliesTo}`];
  return null;
}

/** A bell's file name: a hash, so any name is a safe, short, case-exact file name. */
export function bellFile(dir: string, key: BellKey): string {
  return path.join(dir, crypto.hash('sha256', key).slice(0, 32));
}

interface Listening {
  watcher: FSWatcher | null;
  listeners: number;
  /** Set while nobody listens: the watch is kept this long for the next wait of a loop. */
  idle: NodeJS.Timeout | null;
  /** Set while the bell is being made again after its file was removed. */
  retry: NodeJS.Timeout | null;
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

export class Bells {
  private readonly listening = new Map<BellKey, Listening>();
  private closed = false;
  private ringFailure: string | null = null;

  /** `onRing` runs on every ring of a bell someone here listens to (and when a bell had to be made again). */
  constructor(
    private readonly dir: string,
    private readonly log: Logger,
    private readonly onRing: () => void,
  ) {}

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
   * Listens to these bells until the returned function is called. Throws
   * when a bell cannot be made or watched, so the caller can listen to the
   * directory instead.
   */
  listen(keys: readonly BellKey[]): () => void {
    const armed: BellKey[] = [];
    try {
      for (const key of new Set(keys)) {
        this.arm(key);
        armed.push(key);
      }
    } catch (err) {
      for (const key of armed) this.release(key);
      throw err;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const key of armed) this.release(key);
    };
  }

  /** Bells watched now, lingering ones included (inotify watches this costs). */
  get watched(): number {
    return this.listening.size;
  }

  /** The directory they live in was replaced (store.ts reattach): watch the new one's files. */
  rearmAll(): void {
    for (const [key, entry] of this.listening) this.rearm(key, entry);
  }

  close(): void {
    this.closed = true;
    for (const entry of this.listening.values()) {
      entry.watcher?.close();
      if (entry.idle) clearTimeout(entry.idle);
      if (entry.retry) clearTimeout(entry.retry);
    }
    this.listening.clear();
  }

  private arm(key: BellKey): void {
    const entry = this.listening.get(key);
    if (entry) {
      entry.listeners++;
      if (entry.idle) clearTimeout(entry.idle);
      entry.idle = null;
      return;
    }
    const fresh: Listening = { watcher: null, listeners: 1, idle: null, retry: null };
    fresh.watcher = this.watchBell(key, fresh);
    this.listening.set(key, fresh);
  }

  private release(key: BellKey): void {
    const entry = this.listening.get(key);
    if (!entry || --entry.listeners > 0) return;
    entry.idle = setTimeout(() => {
      if (entry.listeners > 0 || this.listening.get(key) !== entry) return;
      entry.watcher?.close();
      this.listening.delete(key);
    }, BELL_LINGER_MS);
    entry.idle.unref();
  }

  /** Makes the bell's file if it is not there, and watches it. */
  private watchBell(key: BellKey, entry: Listening): FSWatcher {
    const file = bellFile(this.dir, key);
    mkdirSync(this.dir, { recursive: true });
    closeSync(openSync(file, fsc.O_WRONLY | fsc.O_CREAT, 0o666));
    const watcher = watch(file, { persistent: false }, (event) => {
      // 'rename': the file was removed (.state/ cleaned): make it again, and look, since a ring may have been lost.
      if (event === 'rename') this.rearm(key, entry);
      else this.onRing();
    });
    watcher.on('error', () => this.rearm(key, entry));
    return watcher;
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
      try {
        entry.watcher = this.watchBell(key, entry);
      } catch (err) {
        if (attempt < REARM_ATTEMPTS) return this.rearm(key, entry, attempt + 1);
        this.log.warn(`cannot watch the bell for ${key} again (${(err as Error).message}); its waits are woken by the next listing`);
      }
      this.onRing();
    }, REARM_DELAY_MS);
    entry.retry.unref();
  }
}
