/**
 * The first index snapshot of a corpus, built by one process of a swarm.
 *
 * Twenty servers started together on a corpus with no snapshot (a fresh
 * clone, an rsync mirror, `rm -rf .state`) would each read and hash every
 * record: measured at 9,999 records, 2.6x the CPU of the same start with a
 * snapshot. So the first process to start takes `.state/index.build`
 * (created O_EXCL: the lock's only guarantee), reads the corpus and writes
 * the snapshot, then removes the lock; the others wait for that, then load
 * the snapshot and check it against the directory and the issued log as any
 * start does (snapshot-keeper.ts). The lock is only ever a saving: whatever
 * happens to it, every process still checks what it loads, so the worst a
 * lost race or a wrong guess costs is a scan of its own.
 *
 * A waiter never waits on a dead builder for long. The builder touches the
 * lock every HEARTBEAT_MS; a lock whose mtime a waiter has seen stand still
 * for STALE_MS of its own clock (no clock is compared across hosts), or
 * whose builder ran on this host and boot and is gone, is stale: the waiter
 * removes it and takes the turn itself. And no wait lasts past `maxWaitMs`:
 * then the waiter reads the corpus itself. Two waiters that both find one
 * lock stale may remove each other's fresh one: that costs a second scan,
 * never a wrong index.
 */
import fs from 'node:fs/promises';
import type { Logger } from '../../log.js';
import { hostIdentity, pidAlive, whereabouts } from '../../disk/host.js';
import { readStateFile } from '../../disk/state-file.js';

export const HEARTBEAT_MS = 1000;
export const STALE_MS = 5000;
/** The longest a process waits for another's snapshot before it reads the corpus itself. */
export const DEFAULT_BUILD_WAIT_MS = 60_000;
const POLL_MS = 50;

export interface BuildOptions {
  lock: string;
  log: Logger;
  /** Is there a snapshot worth loading now (checked again after every wait)? */
  snapshotThere: () => Promise<boolean>;
  maxWaitMs?: number;
  /** How long a lock's mtime may stand still before it is stale (tests shorten it). */
  staleMs?: number;
  /** The store began to close: stop waiting. */
  stopped: () => boolean;
}

/** What this process does: read the corpus and write the snapshot (holding the lock until `release`), or load what is there. */
export type BuildTurn = { role: 'build'; release(): Promise<void> } | { role: 'load'; waitedMs: number };

export async function takeBuildTurn(options: BuildOptions): Promise<BuildTurn> {
  const started = Date.now();
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_BUILD_WAIT_MS;
  const staleMs = options.staleMs ?? STALE_MS;
  const loadNow = () => ({ role: 'load' as const, waitedMs: Date.now() - started });
  let watched: { mtimeMs: number; sinceMs: number } | null = null;
  for (;;) {
    if (options.stopped() || (await options.snapshotThere())) return loadNow();
    const taken = await tryTake(options.lock);
    if (taken) return { role: 'build', release: taken };
    if (Date.now() - started >= maxWaitMs) {
      options.log.info(`waited ${maxWaitMs} ms for another process's index snapshot (${options.lock}); reading every record instead`);
      return loadNow();
    }
    const holder = await lockHolder(options.lock);
    if (holder === null) continue; // released (or never whole) between our look and now: look again
    if (watched === null || holder.mtimeMs !== watched.mtimeMs) watched = { mtimeMs: holder.mtimeMs, sinceMs: Date.now() };
    if (holder.deadHere || Date.now() - watched.sinceMs > staleMs) {
      options.log.info(`the index snapshot's builder (${options.lock}) is gone; reading the corpus here`);
      await fs.unlink(options.lock).catch(() => {});
      watched = null;
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Creates the lock; null when another process holds it, or when it cannot be made here (a read-only .state). */
async function tryTake(lock: string): Promise<(() => Promise<void>) | null> {
  const { host, boot } = hostIdentity();
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(lock, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return null;
    return async () => {}; // no lock to be had: build alone, as before locks
  }
  try {
    await handle.writeFile(`${host} ${boot} ${process.pid}\n`);
  } finally {
    await handle.close();
  }
  let touching: Promise<void> = Promise.resolve();
  const beat = setInterval(() => {
    const now = new Date();
    touching = fs.utimes(lock, now, now).catch(() => {});
  }, HEARTBEAT_MS);
  beat.unref();
  let released: Promise<void> | null = null;
  // Once, and awaited whole by every caller: a closed store leaves no file operation in flight.
  return () =>
    (released ??= (async () => {
      clearInterval(beat);
      await touching;
      await fs.unlink(lock).catch(() => {});
    })());
}

/** The lock's mtime, and whether its builder ran on this host and boot and has exited; null when there is no lock. */
async function lockHolder(lock: string): Promise<{ mtimeMs: number; deadHere: boolean } | null> {
  const got = await readStateFile(lock);
  if (got.kind === 'missing') return null;
  // A FIFO, a symlink or a huge file is no lock a builder made: its holder is dead, and the lock is taken over.
  if (got.kind === 'odd') return { mtimeMs: 0, deadHere: true };
  const { stat } = got;
  const text = got.bytes.toString('utf8');
  const [host, boot, pid] = text.trim().split(' ');
  // A lock still being written says nothing yet: only its mtime counts.
  if (host === undefined || boot === undefined || pid === undefined) return { mtimeMs: stat.mtimeMs, deadHere: false };
  const where = whereabouts(host, boot);
  const deadHere = where === 'earlier-boot' || (where === 'this-boot' && !pidAlive(Number(pid)));
  return { mtimeMs: stat.mtimeMs, deadHere };
}
