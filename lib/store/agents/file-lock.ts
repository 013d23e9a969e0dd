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
 * judged by whether a lock is there) and holding `host boot pid token`. A
 * lock whose holder is gone (a process of this boot that no longer runs, or
 * one of an earlier boot) is taken over at once, so a server killed while
 * it held one costs nothing; a lock a waiter has seen unchanged for
 * STALE_MS (a holder on another host that crashed, one that hangs) is taken
 * over too: a move takes milliseconds. Waiting backs off from 1 to 20 ms.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { hostIdentity, pidAlive, whereabouts } from '../../disk/host.js';
import { readRegularFile } from '../../disk/record-file.js';

/** A lock a waiter has seen unchanged this long is taken over, whoever holds it. */
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
  const mine = `${me.host} ${me.boot} ${process.pid} ${randomBytes(8).toString('hex')}\n`;
  let backoff = 1;
  for (;;) {
    const made = await createExclusive(lock);
    if (made) {
      try {
        await made.writeFile(mine);
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
    // Only our own lock is removed: one taken over from us (we held past STALE_MS) belongs to its new holder.
    // Told by its words, not its inode: over sshfs every file at one path shows the client's one inode.
    if ((await lockText(lock)) === mine) await fs.unlink(lock).catch(() => {});
  }
}

/**
 * The lock file made with O_EXCL, or null when one is there. sshfs answers
 * EPERM for a name that exists (SFTP has no "exists" status), so such a
 * refusal is judged by a look: a lock there is held; one gone again was
 * released in between, and a refusal with no lock there time after time is
 * the filesystem's real answer.
 */
async function createExclusive(lock: string): Promise<fs.FileHandle | null> {
  for (let absent = 0; ; absent++) {
    try {
      return await fs.open(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return null;
      if (code !== 'EPERM') throw err;
      if ((await fs.lstat(lock).catch(() => null)) !== null) return null;
      if (absent + 1 >= MAX_ABSENT_REFUSALS) throw err;
    }
  }
}

/**
 * Removes a lock whose holder is gone or that is stale; true when it did (or
 * the lock went meanwhile, or another process is removing it).
 *
 * Two waiters can judge the same lock stale. Were each to remove what it
 * judged, the later could remove the lock the earlier made since, and two
 * would hold it. So the removal is decided again holding a second lock,
 * `<lock>.break`, by looking afresh: only a lock that is stale at that look
 * is removed, and only one waiter looks at a time.
 */
async function takenOver(lock: string, refuse: (why: string) => Error): Promise<boolean> {
  const judged = await judge(lock, refuse);
  if (judged !== 'stale') return judged === 'gone';
  const breaker = `${lock}.break`;
  const made = await createExclusive(breaker);
  if (!made) {
    // Another waiter is removing it. A breaker that died holding this lock costs STALE_MS once.
    if ((await judge(breaker, refuse)) === 'stale') await fs.unlink(breaker).catch(() => {});
    return false;
  }
  try {
    await made.writeFile(`${hostIdentity().host} ${hostIdentity().boot} ${process.pid} ${randomBytes(8).toString('hex')}\n`);
  } finally {
    await made.close();
  }
  try {
    if ((await judge(lock, refuse)) === 'stale') await fs.unlink(lock).catch(() => {});
  } finally {
    await fs.unlink(breaker).catch(() => {});
  }
  return true;
}

/** Each lock's words as this process last read them, and since when (this process's own clock). */
const sightings = new Map<string, { text: string; since: number }>();

/**
 * Whether the lock is gone, held, or stale: its holder is a process of this
 * host that is gone (or of an earlier boot), or this process has read the
 * same words in it for STALE_MS.
 *
 * Its age is never taken from its mtime: that is the file server's clock
 * against ours, and over sshfs the client may show the mtime of the lock
 * that was at the path a moment ago (the one a crashed host left), so a
 * lock made a millisecond before looked a minute old and was removed from
 * under its holder. A holder's words are its own (host, boot, pid and a
 * random token): a new lock is new words, and the wait starts again.
 */
async function judge(lock: string, refuse: (why: string) => Error): Promise<'gone' | 'held' | 'stale'> {
  const before = await fs.lstat(lock).catch(() => null);
  if (!before) {
    sightings.delete(lock);
    return 'gone';
  }
  if (!before.isFile()) throw refuse(`its lock ${path.basename(lock)} beside it is not a regular file (a symbolic link, a directory or a device)`);
  const text = (await lockText(lock)) ?? '';
  const now = performance.now();
  let seen = sightings.get(lock);
  if (seen?.text !== text) sightings.set(lock, (seen = { text, since: now }));
  if (now - seen.since > STALE_MS) return 'stale';
  // Only whole words are believed: a read cut short (a client that still has the last lock's size) names no pid.
  const whole = /^(\S+) (\S+) (\d+) [0-9a-f]{16}\n$/.exec(text);
  if (whole) {
    const where = whereabouts(whole[1]!, whole[2]!);
    if (where === 'earlier-boot' || (where === 'this-boot' && !pidAlive(Number(whole[3])))) return 'stale';
  }
  return 'held';
}

async function lockText(lock: string): Promise<string | null> {
  return (await readRegularFile(lock, 512, 'lock').catch(() => null))?.toString('utf8') ?? null;
}
