/**
 * Callers blocked in wait_for_relay: how long a wait may be, what it
 * reports, and the waits themselves.
 */
import { asRelayError, type RelayError } from '../../errors.js';
import type { RecordFilter } from '../../model/filter.js';
import type { RecordMeta } from '../../model/record-index.js';
import { subscribe, type HeldRecord, type OnRecord, type RecordBytes, type RecordFeed, type Subscription } from './subscription.js';

/**
 * A wait's default (spec §8): well under the 60 s many MCP clients give a
 * call without progress, and within the 25–30 s some HTTP clients give one,
 * so a quiet inbox answers empty rather than as a client-side error. The
 * tool's words say so, and say to call again. MAX_WAIT_MS is for callers
 * that choose a longer wait and keep the call alive on progress.
 */
export const DEFAULT_WAIT_MS = 30_000;
export const MAX_WAIT_MS = 90_000;
/**
 * The longest a wait is held for a call that carries no progress token,
 * whatever its timeout_ms says (spec §8): nothing resets the client's
 * clock on such a call, and many clients end one at 60 s, some sooner.
 */
export const UNHELD_MAX_WAIT_MS = 50_000;
/** Taken off UNHELD_MAX_WAIT_MS for the wait itself: a timer fires a little late, and the answer must still be out by then. */
export const UNHELD_SLACK_MS = 1_000;
export const PROGRESS_EVERY_MS = 10_000;

/**
 * The most items one wait answers, through every door (wait_for_relay, the
 * CLI's `wait`). A catch-up from the start of a million-record store would
 * otherwise be a million items (~200 MB of JSON on one line; the SDK's stdio
 * client ends the session past 10 MiB; the CLI printed 200,000 lines from
 * 366 MB at 200k). Past the cap the answer holds the lowest ids and its
 * cursor is the last of them, so the next call (after = cursor) goes on from
 * there: the cursor covers what this call answered, and every record above
 * it is still ahead. GET /events and `tail -f` stream instead, in batches.
 */
export const WAIT_MAX_ITEMS = 10_000;

export interface WaitResult {
  appeared: AppearedRecord[];
  timedOut: boolean;
  waitedMs: number;
  /** The id to pass as `after` next time: covers every record the call considered, matching or not. */
  cursor?: string;
}

export type AppearedRecord = Pick<RecordMeta, 'id' | 'kind' | 'from' | 'to' | 'parent' | 'refs' | 'depositedBy' | 'provenance' | 'depositedAt'> & {
  /** With include_bytes: the record's own bytes (below the deposit header), while the answer's budget lasts. */
  bytes?: string;
  digest?: string;
  /** With include_bytes: this item's bytes did not fit in the answer; fetch them with get_relay. */
  bytesOmitted?: true;
  /** With bytesOmitted: the record's size in bytes (absent when its file could not be read). */
  size?: number;
  /** On a kind: question item of a wait: the held kind: answer records whose parent: is it, when the wait answered. */
  answers?: number;
  /** On a kind: question item of a wait: who gave those answers (their agent where the channel names one, else their from:), in landing order. */
  answeredBy?: string[];
  /** Set by the MCP door: no key proves the record's sender (deposited over stdio or by the CLI). */
  unproven?: true;
  /** Set by the MCP door on a question to the caller (by name or all): the first lines of its answer, for append_relay. */
  reply?: string;
};

/** A blocked wait, as the store's wait (store-options.ts WaitOptions) hands it on: its mark parsed, its cursor and catch-up decided. */
export interface BlockedWaitOptions {
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
  /** The §8a filters: a record they reject never wakes this wait. */
  filter?: RecordFilter | null;
  /** Any other test a record must pass to be answered (a named agent's: not its own, not delivered yet); it wakes nothing otherwise. */
  match?: (meta: RecordMeta, n: number) => boolean;
  /**
   * The cursor to answer with, read at the moment the answer is decided;
   * never below `atLeast`, the highest id answered. `caughtUp` is false for
   * a wait that ends before its catch-up was delivered (aborted: a client
   * that cancelled, a server closing it): the held matches it did not send
   * must then stay above the cursor.
   */
  cursor?: (atLeast: number, caughtUp: boolean) => string;
  /**
   * At most this many items: the catch-up stops there, a larger live burst
   * keeps its lowest ids, and the cursor is the last item (not the highest
   * held), so the next call goes on from it.
   */
  limit?: number;
  /**
   * Called just before a caught-up wait answers, while it still listens:
   * the store looks for records its peers added that it was not woken for
   * (bells.ts), so that the cursor moves past them too; any that match are
   * in the answer.
   */
  lookForPeers?: () => void;
  /**
   * Filled with the checked bytes of the records this wait heard land, where
   * the store had them in hand (it had just read or written them), by id:
   * include_bytes inlines them without reading their files again.
   */
  heardBytes?: Map<string, RecordBytes>;
}

export function appeared(meta: RecordMeta): AppearedRecord {
  const { id, kind, from, to, parent, refs, depositedBy, provenance, depositedAt } = meta;
  return { id, kind, from, to, parent, refs, depositedBy, provenance, depositedAt };
}

/** A wait's window: the default when none is given, never below 0, at most MAX_WAIT_MS, or just under UNHELD_MAX_WAIT_MS without progress. */
export function clampWait(timeoutMs: number | undefined, progress = true): number {
  const most = progress ? MAX_WAIT_MS : UNHELD_MAX_WAIT_MS - UNHELD_SLACK_MS;
  if (timeoutMs === undefined || !Number.isFinite(timeoutMs)) return Math.min(DEFAULT_WAIT_MS, most);
  return Math.min(Math.max(0, Math.floor(timeoutMs)), most);
}

/**
 * The blocked waits of one store. Each is a subscription (subscription.ts)
 * that ends at its first answer: the held records after its mark if there
 * are any, else the first burst that lands, else nothing when the time runs
 * out. A store that closes ends every wait with its refusal.
 */
export class Waiters {
  private active = 0;

  constructor(private readonly feed: RecordFeed) {}

  /** Waits blocked now. */
  get count(): number {
    return this.active;
  }

  wait(options: BlockedWaitOptions): Promise<WaitResult> {
    const started = Date.now();
    const elapsed = () => Date.now() - started;
    if (options.signal?.aborted) return Promise.resolve({ appeared: [], timedOut: false, waitedMs: 0, cursor: options.cursor?.(0, false) });
    return new Promise<WaitResult>((resolve, reject) => {
      const landed: HeldRecord[] = [];
      let settle: NodeJS.Immediate | null = null;
      let done = false;
      let limited = false;
      let caughtUp = false;
      this.active++;
      const finish = (timedOut: boolean, refusal?: RelayError) => {
        if (done) return;
        if (!refusal && caughtUp && !limited) {
          options.lookForPeers?.();
          if (done) return; // it answered meanwhile
          if (landed.length > 0) timedOut = false;
        }
        done = true;
        this.active--;
        subscription.close();
        clearTimeout(timer);
        clearInterval(progress);
        if (settle) clearImmediate(settle);
        options.signal?.removeEventListener('abort', onAbort);
        if (refusal) return reject(refusal);
        resolve(answerOf(landed, options, { limited, caughtUp, timedOut, waitedMs: elapsed() }));
      };
      const onAbort = () => finish(false);
      const subscription = this.follow(options, (reason) => finish(false, reason), (meta, n, phase, bytes) => {
        landed.push({ n, meta });
        if (bytes) options.heardBytes?.set(meta.id, bytes);
        if (phase === 'catch-up' && options.limit !== undefined && landed.length >= options.limit) {
          limited = true;
          return finish(false);
        }
        // Records often land in bursts; answering on the next turn of the
        // event loop hands a burst back as one answer instead of one record a call.
        settle ??= setImmediate(() => finish(false));
      });
      // Records already held after the mark are the answer, at once.
      subscription.caughtUp.then(
        () => {
          caughtUp = true;
          if (landed.length > 0) finish(false);
          // Nothing held and no time to wait: answer now, not a timer's turn later (~1.7 ms a call).
          else if (options.timeoutMs === 0) finish(true);
        },
        (err) => finish(false, asRelayError(err)),
      );
      const timer = setTimeout(() => finish(true), options.timeoutMs);
      const progress = setInterval(() => options.onProgress?.(elapsed()), options.progressEveryMs ?? PROGRESS_EVERY_MS);
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The subscription a wait is: after its mark (a mirror's late fill-in at or below it is not what this caller asked for). */
  private follow(options: BlockedWaitOptions, onClosed: (reason: RelayError) => void, onRecord: OnRecord): Subscription {
    const { after } = options;
    const match = after === null ? options.match : (meta: RecordMeta, n: number) => n > after && (options.match?.(meta, n) ?? true);
    return subscribe(this.feed, { after, skip: options.existing, filter: options.filter, match, onClosed }, onRecord);
  }
}

/**
 * The answer of a wait that ends: with a mark, in id order (records from
 * other writers can land out of order); at most `limit` items, a live
 * burst past it cut to its lowest ids, so that what is left out lies above
 * the cursor; and that cursor.
 */
function answerOf(landed: HeldRecord[], options: BlockedWaitOptions, end: { limited: boolean; caughtUp: boolean; timedOut: boolean; waitedMs: number }): WaitResult {
  let { limited } = end;
  if (options.after !== null) landed.sort((a, b) => a.n - b.n);
  if (options.limit !== undefined && landed.length > options.limit) {
    if (options.after === null) landed.sort((a, b) => a.n - b.n);
    landed.length = options.limit;
    limited = true;
  }
  const highest = landed.reduce((m, r) => Math.max(m, r.n), 0);
  const cursor = limited ? landed[landed.length - 1]!.meta.id : options.cursor?.(highest, end.caughtUp);
  return { appeared: landed.map((r) => appeared(r.meta)), timedOut: end.timedOut, waitedMs: end.waitedMs, cursor };
}
