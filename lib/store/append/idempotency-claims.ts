/**
 * The cross-process exclusive step behind spec §8b: two appends with one
 * (channel, key) in flight at once, in two processes or on two hosts that
 * share a corpus, must store one record. The deposit header is the truth
 * once a record is held; this covers the moment before, when neither
 * writer's index can know about the other.
 *
 *   .state/idempotency/<h>.0, <h>.1, …   claims: whoever links generation g
 *                                        first owns the key until it is done
 *   .state/idempotency/<h>.done          the id stored under the key
 *
 * (h = sha256 of the scope.) A claim is made like a record: written whole
 * to a temp file, then link()ed to its name, which is exclusive on every
 * filesystem link() works on (NFS included) — O_EXCL on a network
 * filesystem is not as trustworthy, and the care link() needs there lives
 * in publish.ts.
 *
 * A writer that dies mid-append leaves its claim behind. Its claim names its
 * host, boot and pid (host.ts); in this boot of this host a pid that is gone
 * is dead at once, and so is any claim from an earlier boot. Otherwise
 * (another host, or a pid that may have been reused) it is dead
 * once its modification time has not moved for `staleMs` of this process's
 * own clock — a live owner touches it every staleMs/4, and comparing only
 * our own observations keeps clock skew between hosts out of it. A dead
 * claim is taken over by linking the next generation, so two recoverers
 * cannot both win; the winner re-reads the corpus before deciding, since
 * the dead writer may have published its record already.
 *
 * None of these files is fsynced: after a power cut the records are durable
 * and the scan reads their keys back, which is all a later retry needs.
 */
import { constants as fsc } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { hostIdentity, pidAlive, whereabouts } from '../../disk/host.js';
import { tempName } from '../../disk/paths.js';
import { linkExclusive } from '../../disk/publish.js';
import { readStateFile } from '../../disk/state-file.js';

/** How long a claim's time may stand still before its owner is presumed dead. */
export const DEFAULT_STALE_MS = 10_000;
/** How long a caller waits for a live owner before giving up with a sentence. */
const MAX_WAIT_MS = 60_000;
/** A done mark outlives every process's watcher latency many times over; the header answers after. */
const KEEP_DONE_MS = 24 * 3600_000;

/** A temp file that could not be removed, or whose create may have landed unanswered (`creating`). */
export type Stranded = (file: string, err: unknown, creating?: boolean) => void;

export type Acquired = { done: false; claim: Claim; tookOver: boolean } | { done: true; id: string };

interface Owner {
  host: string;
  boot: string;
  pid: number;
}

/**
 * Claim files this process holds. A claim that names this
 * process and is not here was abandoned by it while the mount was gone (its
 * unlink failed): dead at once, not after staleMs of a heartbeat that stopped.
 */
const heldHere = new Set<string>();

/**
 * Claim files a store in this process is linking now, and how many are. A
 * link that succeeds is on disk before its caller comes back to mark it
 * held; another store here that judged the file in that gap would find
 * neither mark and take a live claim over, and both would store.
 */
const linkingHere = new Map<string, number>();

/** Temp names share publish.ts's shape (so verify --clean knows them) but never its numbers. */
let seq = 1_000_000_000;

export class IdempotencyClaims {
  private pruned = false;

  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
    private readonly log: Logger,
    private readonly staleMs = DEFAULT_STALE_MS,
    /** Hears of a temp file a lost mount kept us from removing (lost-mount.ts TempLeftovers). */
    private readonly stranded: Stranded = () => {},
  ) {}

  /**
   * Takes the claim on `scope`, or learns the id another writer stored under
   * it. `passOver`: an id the caller found the done mark names falsely (its
   * record does not carry the key); a mark naming it is taken for no mark,
   * until the claim's `finish` replaces it.
   */
  async acquire(scope: string, passOver: string | null = null): Promise<Acquired> {
    // node:crypto on first use, as in model/deposit.ts: start-up never pays for it.
    const base = path.join(this.dir, process.getBuiltinModule('node:crypto').createHash('sha256').update(scope).digest('hex'));
    await fs.mkdir(this.dir, { recursive: true });
    this.pruneOnce();
    const { host, boot } = hostIdentity();
    const content = JSON.stringify({ host, boot, pid: process.pid, nonce: process.getBuiltinModule('node:crypto').randomBytes(8).toString('hex') }) + '\n';
    const watched = new Map<number, { mtimeMs: number; since: number }>();
    const started = Date.now();
    let gen = 0;
    for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
      const done = await readDone(`${base}.done`);
      if (done !== null && done !== passOver) return { done: true, id: done };
      // Marked held only once linked: another store in this process may hold this very name.
      const file = `${base}.${gen}`;
      linkingHere.set(file, (linkingHere.get(file) ?? 0) + 1);
      let linked: boolean;
      try {
        linked = await this.link(content, file);
        if (linked) heldHere.add(file);
      } finally {
        const left = linkingHere.get(file)! - 1;
        if (left === 0) linkingHere.delete(file);
        else linkingHere.set(file, left);
      }
      if (linked) {
        const claim = new Claim(base, gen, this.tmpDir, this.log, this.staleMs, this.stranded);
        // The owner before us marks done before it lets its claim go, so a
        // done mark that appeared between our look and our link shows now.
        const doneMeanwhile = await readDone(`${base}.done`);
        if (doneMeanwhile === null || doneMeanwhile === passOver) return { done: false, claim, tookOver: gen > 0 };
        await claim.abandon();
        return { done: true, id: doneMeanwhile };
      }
      while (await exists(`${base}.${gen + 1}`)) gen++;
      const verdict = await this.judge(`${base}.${gen}`, watched, gen);
      if (verdict === 'gone') continue; // its owner gave up: try the same generation again
      if (verdict === 'dead') {
        this.log.info(`taking over an idempotency claim whose writer is gone (${path.basename(base)}.${gen})`);
        gen++;
        continue;
      }
      if (Date.now() - started > MAX_WAIT_MS) {
        throw new RelayError('key_in_flight', `Another append with this idempotency key has been in flight for over ${MAX_WAIT_MS / 1000} s, so ` +
          `this one did not store anything. Send the same call again later: it will answer that record once it is stored.`);
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  private async judge(file: string, watched: Map<number, { mtimeMs: number; since: number }>, gen: number): Promise<'live' | 'dead' | 'gone'> {
    const got = await readStateFile(file);
    if (got.kind === 'missing') return 'gone';
    // A FIFO, a symlink or a huge file is no claim any writer made: nobody owns the key through it.
    if (got.kind === 'odd') return 'dead';
    const { stat } = got;
    const text = got.bytes.toString('utf8');
    const owner = parseOwner(text);
    if (owner) {
      const where = whereabouts(owner.host, owner.boot);
      if (where === 'earlier-boot') return 'dead';
      if (where === 'this-boot' && (owner.pid === process.pid ? !heldHere.has(file) && !linkingHere.has(file) : !pidAlive(owner.pid))) return 'dead';
    }
    const now = Date.now();
    const seen = watched.get(gen);
    if (!seen || seen.mtimeMs !== stat.mtimeMs) {
      watched.set(gen, { mtimeMs: stat.mtimeMs, since: now });
      return 'live';
    }
    return now - seen.since > this.staleMs ? 'dead' : 'live';
  }

  private async link(content: string, target: string): Promise<boolean> {
    const temp = await writeSmall(this.tmpDir, content, this.stranded);
    try {
      return await linkExclusive(temp, target);
    } finally {
      await fs.unlink(temp).catch((err: unknown) => this.stranded(temp, err));
    }
  }

  /** Once per process, in the background: drop done marks older than a day, and claims left by the dead. */
  private pruneOnce(): void {
    if (this.pruned) return;
    this.pruned = true;
    void (async () => {
      const cutoff = Date.now() - KEEP_DONE_MS;
      for (const name of await fs.readdir(this.dir)) {
        const file = path.join(this.dir, name);
        const stat = await fs.stat(file).catch(() => null);
        if (stat && stat.mtimeMs < cutoff) await fs.unlink(file).catch(() => {});
      }
    })().catch((err) => this.log.debug(`pruning ${this.dir}: ${(err as Error).message}`));
  }
}

/** A claim this process holds: finish it with the stored id, or abandon it. */
export class Claim {
  private readonly file: string;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly base: string,
    private readonly gen: number,
    private readonly tmpDir: string,
    private readonly log: Logger,
    staleMs: number,
    private readonly stranded: Stranded,
  ) {
    this.file = `${base}.${gen}`;
    this.heartbeat = setInterval(() => {
      const now = new Date();
      fs.utimes(this.file, now, now).catch(() => {});
    }, Math.max(10, staleMs / 4));
    this.heartbeat.unref();
  }

  /** False when another writer judged us dead and took the key over: publishing now could duplicate. */
  async stillOurs(): Promise<boolean> {
    return !(await exists(`${this.base}.${this.gen + 1}`)) && (await exists(this.file));
  }

  /**
   * The record is stored as `id`: say so for every later caller, and let the
   * claim go. `replacing`: the id a false done mark names (acquire's
   * passOver), which this mark replaces whole; other processes read the
   * false one until then, and so take the claim after this one, and read the
   * corpus, rather than store without a mark to stop them.
   */
  async finish(id: string, replacing: string | null = null): Promise<void> {
    clearInterval(this.heartbeat);
    try {
      const temp = await writeSmall(this.tmpDir, id + '\n', this.stranded);
      try {
        if (replacing !== null) await fs.rename(temp, `${this.base}.done`);
        else await linkExclusive(temp, `${this.base}.done`); // taken already: a taker-over said the same
      } finally {
        await fs.unlink(temp).catch((err: unknown) => this.stranded(temp, err));
      }
      await fs.unlink(this.file).catch(() => {});
    } catch (err) {
      // The record is stored and its header names the key; a caller that finds
      // no done mark takes the claim over and reads the corpus, so this costs time, not a duplicate.
      this.log.warn(`cannot mark idempotency key done (${(err as Error).message}); later retries will re-read the corpus`);
    }
    // Held until the done mark is there: a store here that judged the claim before would take it over as dead.
    heldHere.delete(this.file);
  }

  /** Nothing was stored: the next caller may take the key at once. */
  async abandon(): Promise<void> {
    clearInterval(this.heartbeat);
    heldHere.delete(this.file);
    await fs.unlink(this.file).catch(() => {});
  }
}

function parseOwner(text: string): Owner | null {
  try {
    const value = JSON.parse(text) as Partial<Owner>;
    return typeof value.host === 'string' && typeof value.boot === 'string' && Number.isInteger(value.pid) ? { host: value.host, boot: value.boot, pid: value.pid! } : null;
  } catch {
    return null; // written but not yet readable through a network cache: judge it by its time only
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * What a done mark says, trimmed: null when there is none. Whatever it says
 * is the caller's to judge (keyed-append.ts): a mark that names no id is a
 * false one, passed over and replaced like any other, not taken for no
 * mark, which would let a store that has not heard of the key's record
 * store it again.
 */
async function readDone(file: string): Promise<string | null> {
  const got = await readStateFile(file);
  if (got.kind === 'missing') return null;
  // Not a small regular file (a FIFO, a symlink, /dev/zero): it names no id, so it is a false mark, replaced whole by the claim's end.
  if (got.kind === 'odd') return '';
  return got.bytes.toString('utf8').trim();
}

/** A temp file named the way verify --clean recognises, not fsynced (see the header comment). */
async function writeSmall(tmpDir: string, content: string, stranded: Stranded): Promise<string> {
  const file = path.join(tmpDir, tempName(process.pid, seq++));
  await fs.writeFile(file, content, { flag: fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, mode: 0o444 }).catch((err: unknown) => {
    stranded(file, err, true); // made on the file server, perhaps, with the answer lost
    throw err;
  });
  return file;
}
