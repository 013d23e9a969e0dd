/**
 * What the subscriptions of one process listen for, and so what wakes it.
 * With bells, one filtered on `to` or `replies_to` is woken by its bells
 * only (bells.ts), and the directory is watched only while some listener
 * wants every record (and for DIRECTORY_LINGER_MS after, so that a caller
 * looping on unfiltered waits does not start and stop a watch per call).
 * Without bells (decided at open) the directory hears everything.
 */
import type { Logger } from '../../log.js';
import { matches, parseRecipients, type RecordFilter } from '../../model/filter.js';
import type { RecordClaims } from '../../model/record.js';
import { bellsFor, type BellKey } from './bell-keys.js';
import type { Bells } from './bells.js';
import type { Peers } from './peers.js';
import type { CorpusWatcher } from './watch.js';

const DIRECTORY_LINGER_MS = 10_000;

/** A subscription's interest: the bells that cover its filter (null: every record), and how to stop listening to them. */
interface Listener {
  filter: RecordFilter | null;
  keys: BellKey[] | null;
  release: (() => void) | null;
  /** Its bells are being set up (Bells.listen has not resolved). */
  arming?: boolean;
}

export interface InterestParts {
  /** Null on a read-only store, which appends nothing and so rings nothing. */
  bells: Bells | null;
  bellsDir: string;
  watcher: CorpusWatcher;
  peers: Peers;
  log: Logger;
}

/** Distinct `to:` texts kept split; past this many the cache starts again. */
const RECIPIENT_TEXTS_KEPT = 1024;

export class Interests {
  private readonly listeners = new Set<Listener>();
  /** Each distinct `to:` text split once: a swarm's records name the same few recipients over and over. */
  private readonly recipientsOfTo = new Map<string, string[]>();
  private byBells = false;
  private stopped = false;
  /** The directory stays watched this long after its last listener for every record leaves. */
  private directoryLinger: NodeJS.Timeout | null = null;

  constructor(private readonly parts: InterestParts) {}

  /**
   * At open, once the filesystem is known: start watching (before the scan,
   * so that nothing landing during it is missed), by bells or by the
   * directory, and arm the listeners that came before.
   */
  start(byBells: boolean, sharedFs: boolean): void {
    this.byBells = byBells;
    this.parts.watcher.watchDirectory(!byBells);
    this.parts.watcher.start(sharedFs);
    for (const listener of this.listeners) void this.arm(listener);
  }

  /** The store is closing: no listener is armed again, and the linger ends. */
  stop(): void {
    this.stopped = true;
    if (this.directoryLinger) clearTimeout(this.directoryLinger);
  }

  /** A subscription's interest, until the returned function is called; then, once its bells are heard from, looks for anything peers added. */
  listen(filter: RecordFilter | null): () => void {
    const listener: Listener = { filter, keys: bellsFor(filter), release: null };
    this.listeners.add(listener);
    // The look comes once the bells are heard from: a record landing while they were set up is found by it.
    void this.arm(listener).then(() => {
      if (this.listeners.has(listener)) this.parts.peers.lookPast();
    });
    return () => {
      if (!this.listeners.delete(listener)) return;
      listener.release?.();
      if (listener.keys === null) this.directoryWanted();
    };
  }

  /** Whether a record claiming this may be for some listener here now (a lazy index checks and announces it at once). */
  wants(claims: RecordClaims): boolean {
    if (this.listeners.size === 0) return false;
    const record = { kind: claims.kind, from: claims.from, recipients: this.recipientsOf(claims.to), named: claims.named };
    for (const listener of this.listeners) if (matches(listener.filter, record)) return true;
    return false;
  }

  private recipientsOf(to: string | null): string[] {
    if (to === null) return [];
    let names = this.recipientsOfTo.get(to);
    if (names) return names;
    if (this.recipientsOfTo.size >= RECIPIENT_TEXTS_KEPT) this.recipientsOfTo.clear(); // texts are the writers' to choose: bounded
    this.recipientsOfTo.set(to, (names = parseRecipients(to)));
    return names;
  }

  /** Bells and directory watches in use now (inotify watches; tests and the bench read it). */
  get listening(): { bells: number; directory: boolean } {
    return { bells: this.parts.bells?.watched ?? 0, directory: this.parts.watcher.watchingDirectory };
  }

  private async arm(listener: Listener): Promise<void> {
    if (!this.byBells || this.stopped) return; // the directory hears everything
    if (listener.keys === null) return this.directoryWanted();
    if (listener.release || listener.arming) return;
    listener.arming = true;
    let release: (() => void) | null = null;
    try {
      release = await this.parts.bells!.listen(listener.keys);
    } catch (err) {
      this.parts.log.warn(`cannot listen by bells in ${this.parts.bellsDir} (${(err as Error).message}); watching the corpus directory instead`);
    } finally {
      listener.arming = false;
    }
    // It ended, or the store began closing, while its bells were set up.
    if (!this.listeners.has(listener) || this.stopped) return release?.();
    listener.release = release;
    if (listener.release) return;
    // No bells for it (past this process's watches, or they failed): the directory hears it.
    listener.keys = null;
    this.directoryWanted();
  }

  /** Watches the directory while a listener wants every record; stops DIRECTORY_LINGER_MS after the last leaves. */
  private directoryWanted(): void {
    if (!this.byBells) return;
    const { watcher } = this.parts;
    if (this.wantsEveryRecord()) {
      if (this.directoryLinger) clearTimeout(this.directoryLinger);
      this.directoryLinger = null;
      watcher.watchDirectory(true);
      return;
    }
    if (this.directoryLinger || !watcher.watchingDirectory) return;
    this.directoryLinger = setTimeout(() => {
      this.directoryLinger = null;
      if (!this.wantsEveryRecord()) watcher.watchDirectory(false);
    }, DIRECTORY_LINGER_MS);
    this.directoryLinger.unref();
  }

  /** Some listener here has no bells to cover it (unfiltered, or filtered on from/kind only). */
  private wantsEveryRecord(): boolean {
    for (const listener of this.listeners) if (listener.keys === null) return true;
    return false;
  }
}
