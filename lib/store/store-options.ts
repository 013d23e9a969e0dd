/**
 * What a store is opened with and what its operations take and answer: the
 * types every door and every wing share, kept apart from the store itself so
 * that a wing can name them without importing the facade that holds it.
 */
import type { Logger } from '../log.js';
import type { Provenance } from '../model/deposit.js';
import type { RecordFilter } from '../model/filter.js';
import type { RecordMeta } from '../model/record-index.js';
import type { RecordReader } from '../disk/record-file.js';
import type { TextIndexLimits } from './index/text-index.js';
import type { AppearedRecord } from './follow/waiters.js';
import type { WatchMode } from './hear/watch.js';

export interface StoreOptions {
  corpus: string;
  maxRecordBytes?: number;
  /** Record files read at once at most (lib/store/read/read-gate.ts); more wait their turn. */
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
   * (hear/bells.ts; default true). False watches the directory always, so
   * that what writers that ring no bell add (git pull, a plain copy) is
   * heard at once: serve --wake directory.
   */
  bells?: boolean;
  /** A named channel's append whose to: names someone not on the roster is refused unknown_recipient (spec §8d). */
  strictRecipients?: boolean;
  /**
   * The agent this process serves (a named stdio server: serve --agent), if
   * any: a lazy index indexes what is addressed to it, or to all, whole at
   * first sight (record-peek.ts addressedTo).
   */
  agent?: string;
  /** How long another host's idempotency claim may stand still before it is presumed dead (tests shorten it). */
  claimStaleMs?: number;
  /** How long to wait for another process's first index snapshot, and when its lock is stale (index/snapshot-build.ts; tests shorten them). */
  buildWait?: { maxWaitMs?: number; staleMs?: number };
  /** How record files are read (the disk by default; a test counts the reads through its own). */
  reader?: RecordReader;
  /** What the text index may hold (index/text-index.ts; tests make it small). */
  textIndex?: Partial<TextIndexLimits>;
  log?: Logger;
}

export interface AppendOptions {
  id?: string;
  depositedBy: string;
  provenance?: Provenance;
  /** spec §8b: at most one record per (depositedBy, key), ever. */
  idempotencyKey?: string;
  /**
   * The agent the channel serves (spec §8d), or absent for an unnamed one.
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
  /** A named channel's append: the to: names no one on the roster has (spec §8d); absent when there are none. */
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
  /** At most this many items in one answer (default WAIT_MAX_ITEMS, every door's); the cursor is then the last of them (follow/waiters.ts). */
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
  /** Receipts: the named recipients of the record who have had it delivered (spec §8d); absent where no recipient has marks. */
  deliveredTo?: string[];
  /** Each with its thread links, so a caller tells an answer (parent is the id) from a citation (refs holds it). */
  replies: AppearedRecord[];
}
