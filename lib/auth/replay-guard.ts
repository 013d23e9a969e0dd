/**
 * The one-time-signature guard, shared by every process that serves one
 * corpus (SPEC §10: accepted once, held at least 120 s, across processes).
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
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { silentLogger, type Logger } from '../log.js';

export const HOLD_S = 120;
const BUCKET_S = 60;
/** The skew window of SPEC §10: a ts older than this is refused before the guard is asked. */
const ACCEPT_WINDOW_S = 60;
const PRUNE_EVERY_MS = 60_000;

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

  constructor(dir: string, options: { now?: () => number; log?: Logger } = {}) {
    this.dir = dir;
    this.now = options.now ?? Date.now;
    this.log = options.log ?? silentLogger;
  }

  async accept(sig: string, ts: string): Promise<boolean> {
    const bucket = String(Math.floor(Number(ts) / BUCKET_S) * BUCKET_S);
    const bucketDir = path.join(this.dir, bucket);
    const file = path.join(bucketDir, createHash('sha256').update(sig).digest('hex'));
    for (let attempt = 0; ; attempt++) {
      if (!this.made.has(bucket)) {
        // Level by level, never recursive from the corpus down: when the
        // corpus directory is gone this must fail, not make an empty one
        // that the append after it would then write into.
        for (const dir of [path.dirname(this.dir), this.dir, bucketDir]) {
          await fs.mkdir(dir).catch((e: NodeJS.ErrnoException) => {
            if (e.code !== 'EEXIST') throw e;
          });
        }
        this.made.add(bucket);
      }
      try {
        await (await fs.open(file, 'wx')).close();
        return true;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
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
      }
    }
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
