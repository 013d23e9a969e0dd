/**
 * One read-modify-write of a small state file at a time, across every
 * process on the corpus. A mark (two servers of one agent, a server and an
 * `inbox` hook): without it, two processes that read the same mark and each
 * write their move leave the one written last, which may be the smaller,
 * and the agent is handed records again. An about, the same way: the later
 * record's must win, whichever process writes last.
 *
 * The lock is a file `.<name>.lock` beside the file, made with O_EXCL (one
 * creator wins; over sshfs a taken name answers EPERM, so a refusal is
 * judged by whether a lock is there) and holding `host boot pid`. A lock whose holder is gone (a
 * process of this boot that no longer runs, or one of an earlier boot) is
 * taken over at once, so a server killed while it held one costs nothing; a
 * lock older than STALE_MS (a holder on another host, one that hangs) is
 * taken over too: a move takes milliseconds. Waiting for a lock backs off
 * from 1 to 20 ms.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { hostIdentity, pidAlive, whereabouts } from '../../disk/host.js';
import { readRegularFile } from '../../disk/record-file.js';

/** A lock held this long is taken over, whoever holds it. */
export const STALE_MS = 10_000;
const MAX_BACKOFF_MS = 20;
/** An exclusive create refused this many times in a row with no lock at the path is a real refusal (a read-only corpus). */
const MAX_ABSENT_REFUSALS = 5;

/** The lock file beside a file. Its name starts with a dot, as temp files do: no listing of marks or abouts takes it for one. */
export function lockOf(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.lock`);
}

export interface LockOptions {
  /** Where the lock file is, when not beside the file (lockOf). */
  lock?: string;
  /** Asked before each wait for a taken lock: true ends the wait with an error and runs nothing (its owner is closing). */
  giveUp?: () => boolean;
}

/**
 * Runs `run` holding the file's lock; `refuse` makes the refusal when
 * something other than a lock file sits at its path.
 */
export async function withFileLock<T>(file: string, run: () => Promise<T>, refuse: (why: string) => Error, { lock = lockOf(file), giveUp }: LockOptions = {}): Promise<T> {
  const me = hostIdentity();
  let backoff = 1;
  let ino: bigint;
  let absentRefusals = 0;
  for (;;) {
    const made = await fs.open(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') return null;
      // sshfs answers EPERM for a name that exists (SFTP has no "exists" status): a lock there now is held.
      // One gone again by the look was released in between: try again, but a refusal with no lock there,
      // time after time, is the filesystem's real answer.
      if (err.code !== 'EPERM') throw err;
      if ((await fs.lstat(lock).catch(() => null)) !== null) {
        absentRefusals = 0;
        return null;
      }
      if (++absentRefusals >= MAX_ABSENT_REFUSALS) throw err;
      return null;
    });
    if (made) {
      try {
        await made.writeFile(`${me.host} ${me.boot} ${process.pid}\n`);
        ino = (await made.stat({ bigint: true })).ino;
      } finally {
        await made.close();
      }
      break;
    }
    if (await takenOver(lock, refuse)) continue;
    if (giveUp?.()) throw new Error(`gave up waiting for ${path.basename(lock)}`);
    await new Promise((resolve) => setTimeout(resolve, backoff * (1 + Math.random())));
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }
  try {
    return await run();
  } finally {
    // Only our own lock is removed: one taken over from us (we took past STALE_MS) belongs to its new holder.
    const now = await fs.lstat(lock, { bigint: true }).catch(() => null);
    if (now?.ino === ino) await fs.unlink(lock).catch(() => {});
  }
}

/** Removes a lock whose holder is gone or that is stale; true when it did (or the lock went meanwhile). */
async function takenOver(lock: string, refuse: (why: string) => Error): Promise<boolean> {
  const before = await fs.lstat(lock, { bigint: true }).catch(() => null);
  if (!before) return true;
  if (!before.isFile()) throw refuse(`its lock ${path.basename(lock)} beside it is not a regular file (a symbolic link, a directory or a device)`);
  const text = (await readRegularFile(lock, 512, 'lock').catch(() => Buffer.alloc(0))).toString('utf8');
  const [host, boot, pid] = text.trim().split(' ');
  const age = Date.now() - Number(before.mtimeMs);
  let gone = age > STALE_MS;
  if (!gone && host && boot && pid && /^\d+$/.test(pid)) {
    const where = whereabouts(host, boot);
    gone = where === 'earlier-boot' || (where === 'this-boot' && !pidAlive(Number(pid)));
  }
  if (!gone) return false;
  // The same lock we judged, not one made since by a process that took it over first.
  const still = await fs.lstat(lock, { bigint: true }).catch(() => null);
  if (still?.ino === before.ino) await fs.unlink(lock).catch(() => {});
  return true;
}
