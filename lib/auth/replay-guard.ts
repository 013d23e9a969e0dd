/**
 * The one-time-signature guard, shared by every process that serves one
 * corpus (spec §10: accepted once, held at least 120 s, across processes).
 *
 * Accepting a signature is creating a file with O_EXCL under
 * `.state/replay/<bucket>/<sha256 of the signature>`: the kernel makes the
 * create exclusive across processes, with no lock and no daemon. The file
 * name is a digest so a full signature never lands on disk.
 *
 * Buckets are minutes of the signature's own ts (not of the time it was
 * seen), so every process files the same signature under the same name. A
 * signature with ts T is accepted no later than T+60 s, so bucket b (ts in
 * [60b, 60b+60)) is needed until 60b+120+120 at the latest; pruning removes
 * whole buckets after that.
 *
 * Entries are not fsynced: after a power cut a signature from the last
 * seconds could be accepted again. That is the trade for ~20 µs per check.
 *
 * Two bounds, so the guard can neither be made to fill the disk nor made to
 * forget (docs/security.md):
 * - One agent may have at most `perAgentPerMinute` signatures accepted per
 *   minute bucket by this process (`too_many_signatures` beyond), so no
 *   agent can fill the disk's inodes with guard entries: about six buckets
 *   are alive at once, so one agent holds at most six times that.
 * - When the guard's directory was lost (`.state/` removed), signatures
 *   whose ts could be in what it forgot are refused (guard-memory.ts).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { errnoName, LOST_CONNECTION, RelayError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { guardMemory, type GuardMemory } from './guard-memory.js';

export const HOLD_S = 120;
const BUCKET_S = 60;
/** The skew window of spec §10: a ts older than this is refused before the guard is asked. */
const ACCEPT_WINDOW_S = 60;
const PRUNE_EVERY_MS = 60_000;
/** Signatures one agent may have accepted per minute bucket, per process, by default: the append rate's 10/s. */
export const DEFAULT_SIGNATURES_PER_MINUTE = 600;

export interface SignatureGuard {
  /** True the first time a signature is seen, false on every later try (in any process). */
  accept(sig: string, ts: string, agent?: string): Promise<boolean>;
}

export class ReplayGuard implements SignatureGuard {
  private readonly dir: string;
  private readonly made = new Set<string>();
  private readonly now: () => number;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | null = null;
  private readonly perAgentPerMinute: number;
  /** bucket → agent → signatures accepted here. */
  private readonly spent = new Map<string, Map<string, number>>();
  private memory: GuardMemory | null = null;
  private readonly holdsRecords: () => Promise<boolean>;

  /** `holdsRecords`: whether the store holds any record (a store with none has nothing to replay); assumed so when not given. */
  constructor(dir: string, options: { now?: () => number; log?: Logger; perAgentPerMinute?: number; holdsRecords?: () => Promise<boolean> } = {}) {
    this.dir = dir;
    this.holdsRecords = options.holdsRecords ?? (async () => true);
    this.now = options.now ?? Date.now;
    this.log = options.log ?? silentLogger;
    this.perAgentPerMinute = options.perAgentPerMinute ?? DEFAULT_SIGNATURES_PER_MINUTE;
  }

  /** Entries this process accepted for an agent in buckets not yet pruned. */
  heldFor(agent: string): number {
    let n = 0;
    for (const byAgent of this.spent.values()) n += byAgent.get(agent) ?? 0;
    return n;
  }

  async accept(sig: string, ts: string, agent?: string): Promise<boolean> {
    const nowS = Math.floor(this.now() / 1000);
    const bucket = String(Math.floor(Number(ts) / BUCKET_S) * BUCKET_S);
    const bucketDir = path.join(this.dir, bucket);
    const file = path.join(bucketDir, createHash('sha256').update(sig).digest('hex'));
    // Counted before the first await, so concurrent requests cannot all pass the check; given back unless accepted.
    const release = agent === undefined ? () => {} : this.count(agent, bucket, nowS);
    let accepted = false;
    try {
      accepted = await this.create(file, bucket, bucketDir, ts, nowS);
      return accepted;
    } finally {
      if (!accepted) release();
    }
  }

  /** Takes one of the agent's signatures in this bucket, or refuses; returns how to give it back. */
  private count(agent: string, bucket: string, nowS: number): () => void {
    const counts = this.spent.get(bucket) ?? new Map<string, number>();
    const mine = counts.get(agent) ?? 0;
    if (mine >= this.perAgentPerMinute) throw this.budgetRefusal(agent, Number(bucket), nowS);
    this.spent.set(bucket, counts);
    counts.set(agent, mine + 1);
    return () => counts.set(agent, (counts.get(agent) ?? 1) - 1);
  }

  private async create(file: string, bucket: string, bucketDir: string, ts: string, nowS: number): Promise<boolean> {
    await this.checkMemory(ts, nowS);
    for (let attempt = 0; ; attempt++) {
      if (!this.made.has(bucket)) {
        await fs.mkdir(bucketDir).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
        this.made.add(bucket);
      }
      try {
        await (await fs.open(file, 'wx')).close();
        return true;
      } catch (err) {
        const code = errnoName(err); // names ESTALE, which Node leaves as "Unknown system error -116"
        if (code === 'EEXIST') return false;
        // sshfs answers EPERM where the name exists (and NFS can answer
        // oddly): whatever the error, a name that is there now means another
        // process accepted this signature first.
        if (await exists(file)) return false;
        // ENOENT: another process pruned the bucket under us (only after a
        // clock jump), or `.state/` was removed; ESTALE: the directory was
        // replaced on an NFS server. Make it again once.
        if ((code !== 'ENOENT' && code !== 'ESTALE') || attempt > 0) throw err;
        this.made.delete(bucket);
        await this.checkMemory(ts, nowS); // the whole directory may be gone: memory lost
      }
    }
  }

  /**
   * Loads (or begins) the guard's memory, notices a directory that was
   * removed or replaced since, and refuses a ts it cannot vouch for.
   */
  private async checkMemory(ts: string, nowS: number): Promise<void> {
    const current = await fs.stat(this.dir).then(
      (st) => st.ino,
      (err: unknown) => {
        // A lost network mount is not a removed directory: forgetting the memory would refuse good signatures as guard_reset.
        if (LOST_CONNECTION.has(errnoName(err) ?? '')) throw err;
        return null;
      },
    );
    if (this.memory === null || current !== this.memory.ino) {
      this.memory = await guardMemory(this.dir, nowS, this.holdsRecords);
      this.made.clear();
      if (this.memory.since >= nowS - 1) this.log.warn(
        `the one-time signature guard's memory (${this.dir}) was missing, so it begins now; ` +
        `signatures dated before ${this.memory.since + ACCEPT_WINDOW_S} (unix time) are refused, ` +
        `since they could be ones it forgot`);
    }
    const safeFrom = this.memory.since + ACCEPT_WINDOW_S;
    if (this.memory.since > 0 && Number(ts) < safeFrom) {
      const retryAfterS = Math.max(1, safeFrom - nowS);
      throw new RelayError(
        'guard_reset',
        `This hub lost its record of used signatures (its .state/ directory was removed or replaced at unix ` +
          `time ${this.memory.since}), so it cannot tell whether a signature dated before ${safeFrom} was already ` +
          `used; nothing was done. Sign the request again with a ts of ${safeFrom} or later (in ${retryAfterS} s).`,
        { reason: 'guard_reset', retryAfterS, safeFrom },
      );
    }
  }

  private budgetRefusal(agent: string, bucketStart: number, nowS: number): RelayError {
    const retryAfterS = Math.max(1, Math.min(60, bucketStart + BUCKET_S - nowS));
    return new RelayError(
      'too_many_signatures',
      `Agent ${agent} has had ${this.perAgentPerMinute} signatures accepted in this minute, ` +
        `the most one agent may have the hub remember, so this request was not run; ` +
        `retry in ${retryAfterS} s (reads need no signature).`,
      { retryAfterS },
    );
  }

  /** Removes buckets no signature can be replayed into any more. Returns how many went. */
  async prune(): Promise<number> {
    const nowS = Math.floor(this.now() / 1000);
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch {
      return 0;
    }
    let removed = 0;
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      const start = Number(name);
      // Newest ts in the bucket + the accept window + the hold after acceptance.
      if (start + BUCKET_S + ACCEPT_WINDOW_S + HOLD_S > nowS) continue;
      this.made.delete(name);
      this.spent.delete(name);
      // Several processes may prune the same bucket at once; whoever loses finds it gone.
      await fs.rm(path.join(this.dir, name), { recursive: true, force: true }).catch(() => {});
      removed++;
    }
    return removed;
  }

  /** Prunes now and then every minute, without keeping the process alive. */
  start(): void {
    if (this.timer) return;
    const run = () => void this.prune().catch((err) => this.log.warn(`pruning the replay guard failed: ${(err as Error).message}`));
    run();
    this.timer = setInterval(run, PRUNE_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** Whether a name is there (lstat: a link counts as there, and is not followed). */
async function exists(file: string): Promise<boolean> {
  return fs.lstat(file).then(() => true, () => false);
}
