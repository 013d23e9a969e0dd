/**
 * Callers blocked in wait_for_relay (and SSE streams, which are long waits).
 * The store calls `notify` for every record it indexes, whatever brought it:
 * its own append, another process, rsync, git.
 */
import type { RecordMeta } from '../model/record-index.js';

export const DEFAULT_WAIT_MS = 30_000;
export const MAX_WAIT_MS = 90_000;
export const PROGRESS_EVERY_MS = 10_000;

export interface WaitResult {
  appeared: AppearedRecord[];
  timedOut: boolean;
  waitedMs: number;
}

export type AppearedRecord = Pick<RecordMeta, 'id' | 'kind' | 'from' | 'to' | 'depositedBy' | 'provenance'>;

export interface WaitOptions {
  /** The last id seen (as a number; 0 means from the start), or null for "whatever lands from now on". */
  after: number | null;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called every PROGRESS_EVERY_MS while blocked, with the milliseconds waited so far. */
  onProgress?: (waitedMs: number) => void;
  progressEveryMs?: number;
  /**
   * Ids already on disk when the wait began. This process may notice such a
   * file only later (another writer's record its watcher has not reported
   * yet); it landed before the call, so it is not news to this caller. While
   * the promise is pending, records are held back until it settles.
   */
  existing?: Promise<ReadonlySet<number>>;
}

type Listener = (n: number, meta: RecordMeta) => void;

export function appeared(meta: RecordMeta): AppearedRecord {
  return { id: meta.id, kind: meta.kind, from: meta.from, to: meta.to, depositedBy: meta.depositedBy, provenance: meta.provenance };
}

export function clampWait(timeoutMs: number | undefined): number {
  if (timeoutMs === undefined || !Number.isFinite(timeoutMs)) return DEFAULT_WAIT_MS;
  return Math.min(Math.max(0, Math.floor(timeoutMs)), MAX_WAIT_MS);
}

export class Waiters {
  private readonly listeners = new Set<Listener>();

  get count(): number {
    return this.listeners.size;
  }

  notify(n: number, meta: RecordMeta): void {
    for (const listener of this.listeners) listener(n, meta);
  }

  /** Subscribe to every record indexed from now on; returns the unsubscribe function. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Blocks until a matching record lands or the time runs out. `heldAfter`
   * answers from the index, so a wait with `after` returns at once when
   * something newer is already held.
   */
  wait(options: WaitOptions, heldAfter: (after: number) => RecordMeta[]): Promise<WaitResult> {
    const started = Date.now();
    const elapsed = () => Date.now() - started;
    if (options.after !== null) {
      const already = heldAfter(options.after);
      if (already.length > 0) return Promise.resolve({ appeared: already.map(appeared), timedOut: false, waitedMs: elapsed() });
    }
    if (options.signal?.aborted) return Promise.resolve({ appeared: [], timedOut: false, waitedMs: 0 });

    return new Promise<WaitResult>((resolve) => {
      const landed: RecordMeta[] = [];
      let settle: NodeJS.Immediate | null = null;
      let done = false;
      const finish = (timedOut: boolean) => {
        if (done) return;
        done = true;
        unsubscribe();
        clearTimeout(timer);
        clearInterval(progress);
        if (settle) clearImmediate(settle);
        options.signal?.removeEventListener('abort', onAbort);
        const records = options.after !== null && landed.length > 0 ? heldAfter(options.after) : landed;
        resolve({ appeared: records.map(appeared), timedOut, waitedMs: elapsed() });
      };
      const onAbort = () => finish(false);
      // Records often land in bursts; answering on the next turn of the event
      // loop hands a burst back as one answer instead of one record a call.
      let existing: ReadonlySet<number> | null = options.existing ? null : new Set();
      const consider = (n: number, meta: RecordMeta) => {
        if ((options.after !== null && n <= options.after) || existing!.has(n)) return;
        landed.push(meta);
        settle ??= setImmediate(() => finish(false));
      };
      const early: [number, RecordMeta][] = [];
      const unsubscribe = this.subscribe((n, meta) => (existing ? consider(n, meta) : early.push([n, meta])));
      options.existing?.then(
        (set) => ((existing = set), early.forEach(([n, meta]) => consider(n, meta))),
        () => ((existing = new Set()), early.forEach(([n, meta]) => consider(n, meta))),
      );
      const timer = setTimeout(() => finish(true), options.timeoutMs);
      const progress = setInterval(() => options.onProgress?.(elapsed()), options.progressEveryMs ?? PROGRESS_EVERY_MS);
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
