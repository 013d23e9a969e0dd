/**
 * One read-modify-write of a small state file at a time, across every
 * process on the corpus. A mark (two servers of one agent, a server and an
 * `inbox` hook): without it, two processes that read the same mark and each
 * write their move leave the one written last, which may be the smaller,
 * and the agent is handed records again. An about, the same way: the later
 * record's must win, whichever process writes last.
 *
 * The lock is a file `.<name>.lock` beside the file, made with O_EXCL (one
 * creator wins) and holding `host boot pid`. A lock whose holder is gone (a
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

/** Makes the lock file, holding `host boot pid`, if none is there; its inode, or null when one is. */
async function createExclusive(lock: string): Promise<bigint | null> {
  const made = await fs.open(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EEXIST') return null;
    throw err;
  });
  if (!made) return null;
  try {
    const me = hostIdentity();
    await made.writeFile(`${me.host} ${me.boot} ${process.pid}\n`);
    return (await made.stat({ bigint: true })).ino;
  } finally {
    await made.close();
  }
}

/**
 * Runs `run` holding the file's lock; `refuse` makes the refusal when
 * something other than a lock file sits at its path.
 */
export async function withFileLock<T>(file: string, run: () => Promise<T>, refuse: (why: string) => Error, { lock = lockOf(file), giveUp }: LockOptions = {}): Promise<T> {
  let backoff = 1;
  let ino: bigint;
  for (;;) {
    const made = await createExclusive(lock);
    if (made !== null) {
      ino = made;
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

/**
 * Removes a lock whose holder is gone or that is stale; true when it did (or
 * the lock went meanwhile). Judging and removing are two steps, so two
 * waiters that judged the same dead lock could each remove one: the second
 * the lock the first had just made, letting two hold it. A waiter removes a
 * lock only holding `.NAME.lock.break` (O_EXCL), judging it again there; a
 * break lock whose own holder died is removed the plain way.
 */
async function takenOver(lock: string, refuse: (why: string) => Error): Promise<boolean> {
  const first = await judged(lock, refuse);
  if (first === 'absent') return true;
  if (first === 'held') return false;
  const breaker = `${lock}.break`;
  const made = await createExclusive(breaker);
  if (!made) {
    const other = await judged(breaker, refuse);
    if (other !== 'held' && other !== 'absent') await fs.unlink(breaker).catch(() => {});
    return false;
  }
  try {
    const again = await judged(lock, refuse);
    if (again === 'absent') return true;
    if (again === 'held') return false;
    await fs.unlink(lock).catch(() => {});
    return true;
  } finally {
    await fs.unlink(breaker).catch(() => {});
  }
}

/** Whether a lock is there and whose: 'absent', 'held' by a live holder, else 'gone' (its holder died, or it is stale). */
async function judged(lock: string, refuse: (why: string) => Error): Promise<'absent' | 'held' | 'gone'> {
  const before = await fs.lstat(lock, { bigint: true }).catch(() => null);
  if (!before) return 'absent';
  if (!before.isFile()) throw refuse(`its lock ${path.basename(lock)} beside it is not a regular file (a symbolic link, a directory or a device)`);
  const text = (await readRegularFile(lock, 512, 'lock').catch(() => Buffer.alloc(0))).toString('utf8');
  const [host, boot, pid] = text.trim().split(' ');
  const age = Date.now() - Number(before.mtimeMs);
  let gone = age > STALE_MS;
  if (!gone && host && boot && pid && /^\d+$/.test(pid)) {
    const where = whereabouts(host, boot);
    gone = where === 'earlier-boot' || (where === 'this-boot' && !pidAlive(Number(pid)));
  }
  return gone ? 'gone' : 'held';
}
