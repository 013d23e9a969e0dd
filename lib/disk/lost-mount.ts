/**
 * A network mount that goes away under an append (the ssh connection under
 * sshfs dropped, a GlusterFS client that lost its bricks, an NFS server
 * rebooting) is a transient fault, not a bug: the append is refused with
 * `store_unreachable`, a sentence naming the mount, and the promise that
 * sending it again under the same idempotency key is safe.
 *
 * Whether the first try stored the record cannot be known when the answer
 * to link() was lost with the connection: the file server may have made
 * the link. So the refusal never says "nothing was stored"; a keyed retry
 * reads the corpus before deciding (append-once.ts), and answers the record
 * if it is there.
 *
 * The same lost connection strands the temp files this process could not
 * unlink. `TempLeftovers` keeps their names and removes them once the mount
 * answers again, with this host's other dead writers' temp files (the ones
 * `verify --clean` would remove).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { errnoName, LOST_CONNECTION, RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { strayTemps } from './stray-temps.js';

/**
 * errno codes that mean the connection under the mount was lost, whatever
 * the filesystem: FUSE's ENOTCONN once its daemon is gone, NFS's ESTALE.
 * (sshfs with `-o reconnect` answers EIO when its ssh is killed, measured in
 * test/system/beds/multi-host.ts; GlusterFS with quorum kept answered nothing at all
 * when a storage host went, test/system/beds/gluster.ts.)
 */
const LOST_ALWAYS = LOST_CONNECTION;
/**
 * On a network mount these are the connection too (EIO is what sshfs answers
 * requests in flight when ssh dies); on a local disk EIO is the disk itself,
 * and the socket codes cannot come from a filesystem call at all.
 */
const LOST_WHEN_SHARED = new Set(['EIO', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNREFUSED']);

/** The errno of `err` when it means a lost connection on this kind of filesystem, else null. */
export function lostConnectionCode(err: unknown, shared: boolean): string | null {
  if (err instanceof RelayError) return null;
  const code = errnoName(err);
  if (code === undefined) return null;
  return LOST_ALWAYS.has(code) || (shared && LOST_WHEN_SHARED.has(code)) ? code : null;
}

/**
 * The refusal for an append whose mount went away, naming its filesystem;
 * null when `err` is something else. It names no path: a refusal can reach
 * a remote caller, who has no use for where the hub keeps its files (the
 * operator has the corpus on the command line and in the logs).
 */
export function lostMountRefusal(err: unknown, mount: { corpus: string; type: string }, shared: boolean): RelayError | null {
  const errno = lostConnectionCode(err, shared);
  if (errno === null) return null;
  return new RelayError(
    'store_unreachable',
    `The corpus (on ${mount.type}) stopped answering during this append: the connection to its file server was lost (${errno}). ` +
      'It may or may not have been stored. Send the same call again with the same idempotency_key: that is safe, and answers the record if this try stored it. ' +
      'Without a key, look for it (list_relays) before sending it again.',
    { errno, retry: 'same idempotency key' },
  );
}

/** How often stranded temp files are tried again, and for how long before only `verify --clean` is left to remove them. */
const SWEEP_EVERY_MS = 1_000;
const SWEEP_FOR_MS = 30 * 60_000;

/**
 * Temp files this process could not remove because the mount was gone. Each
 * is tried again every second (an unref'd timer: it never holds a process
 * up) until it is gone; the first sweep that removes one also removes this
 * host's dead writers' temp files, which the same outage may have left.
 */
export class TempLeftovers {
  private readonly left = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly tmpDir: string,
    private readonly log: Logger,
  ) {}

  /**
   * Creating or removing a temp file failed with `err`: keep its name for the
   * next sweep when the failure was a lost connection (the file server may
   * have made it and the answer been lost), or any failure of an unlink
   * other than "not there".
   */
  note(file: string, err: unknown, creating = false): void {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    if (creating && lostConnectionCode(err, true) === null) return;
    if (!this.left.has(file)) this.left.set(file, Date.now());
    this.timer ??= setInterval(() => void this.sweep(), SWEEP_EVERY_MS).unref();
  }

  get size(): number {
    return this.left.size;
  }

  /** Tries every stranded file once; resolves with how many are still there. */
  async sweep(): Promise<number> {
    let removed = 0;
    for (const [file, since] of this.left) {
      try {
        await fs.unlink(file);
        removed++;
        this.left.delete(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') this.left.delete(file);
        else if (Date.now() - since > SWEEP_FOR_MS) {
          this.left.delete(file);
          this.log.warn(`${file} could not be removed for ${SWEEP_FOR_MS / 60_000} min (${(err as Error).message}); \`p-e-relay verify --clean\` on this host removes it`);
        }
      }
    }
    if (removed > 0) {
      this.log.info(`the corpus answers again: removed ${removed} temp file(s) a lost connection had left`);
      await this.removeDeadWritersTemps();
    }
    if (this.left.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    return this.left.size;
  }

  /** At close: one last try, then the timer stops whatever is left (verify --clean's to remove). */
  async close(): Promise<void> {
    if (this.left.size > 0) await this.sweep().catch(() => {});
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async removeDeadWritersTemps(): Promise<void> {
    try {
      for (const name of await strayTemps(this.tmpDir)) await fs.unlink(path.join(this.tmpDir, name)).catch(() => {});
    } catch {
      // the listing failed: the mount is going again; the next outage's sweep tries again
    }
  }
}

/** Pauses before each retry of an append refused store_unreachable: sshfs's reconnect takes a few hundred ms; 7 s in all. */
export const LOST_MOUNT_RETRY_PAUSES_MS = [250, 1000, 2000, 4000];

/**
 * Runs `append` (a keyed append: only a key makes a retry safe) and, while
 * it is refused store_unreachable, again after each pause. The last refusal
 * is thrown as it came.
 */
export async function retryingLostMount<T>(append: () => Promise<T>, log: Logger, pauses: readonly number[] = LOST_MOUNT_RETRY_PAUSES_MS): Promise<T> {
  // The store's settle pauses are unref'd (a server's transport holds its process up); a process that
  // only appends, such as the CLI, must not exit while an append waits in one after a drop.
  const hold = setInterval(() => {}, 60_000);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        return await append();
      } catch (err) {
        if (!(err instanceof RelayError && err.code === 'store_unreachable') || attempt >= pauses.length) throw err;
        log.info(`the corpus stopped answering (${String(err.details.errno)}); sending the append again under the same idempotency key in ${pauses[attempt]} ms`);
        await new Promise((resolve) => setTimeout(resolve, pauses[attempt]));
      }
    }
  } finally {
    clearInterval(hold);
  }
}
