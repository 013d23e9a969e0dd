/**
 * Who is there (spec §8d): every name that has signed, served or been given a
 * key, when it was last seen, and whether it is waiting now. Kept under
 * `.state/roster/`, this machine's, by every process that serves a name:
 *
 *   roster/<name>                 one small file per name: how it is known; its mtime is when it was last seen
 *   roster/.live/<host>.<boot>.<pid>   per process: the names waiting in it now
 *   roster/.about/<name>          the name's about: its text and the id of the record that stated it
 *   roster/.about.<name>.lock     held while a process writes that about (file-lock.ts)
 *
 * Cheap for a swarm: a name's file is created once; "last seen" is a
 * utimes() at most once a minute per name and process; a process rewrites
 * its live file only when its set of waiting names changes, at most once a
 * second. Twenty servers looping on waits cost a few small writes a second
 * between them, not one per call. A live file whose process is gone (same
 * host and boot: its pid is not running) is not counted, and is removed; one
 * from another host counts for ten minutes after it was written. The roster
 * holds at most MAX_NAMES names (past that a new name is logged, not kept).
 *
 * An about (lib/model/about.ts) is written here by the process that stored
 * its record, and again from the records at a store's open (abouts.ts), so
 * a corpus cloned or mirrored without .state/ has its abouts too. The
 * highest record id wins: a restated about replaces an older one, and a
 * late writer of an older one does not undo it.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../log.js';
import { hostIdentity, hostTag, pidAlive, whereabouts } from '../../disk/host.js';
import { tempBeside } from '../../disk/paths.js';
import { readStateFile } from '../../disk/state-file.js';
import { shownAbout } from '../../model/about.js';
import { withFileLock } from './file-lock.js';

export type KnownBy = 'served' | 'signed' | 'key';

export interface RosterEntry {
  name: string;
  /** When it last made a call here (or was given a key), ISO 8601 UTC. */
  lastSeen: string;
  /** A wait of its own is open now in some process on this machine's corpus. */
  waiting: boolean;
  how: KnownBy[];
  /** What it said it does and knows (its latest about), shown printable and capped; absent when it has said nothing. */
  about?: string;
}

/** An about as the roster holds it: the text and the number of the record that stated it. */
export interface HeldAbout {
  about: string;
  id: number;
}

export const MAX_NAMES = 10_000;
const SEEN_EVERY_MS = 60_000;
const LIVE_EVERY_MS = 1_000;
/** The coarsest mtime a filesystem keeps (whole seconds over SFTP, some NFS servers). */
const COARSE_MTIME_MS = 1_000;
/** The abouts are read again at least this often, whatever the directory's mtime says. */
const ABOUT_BACKSTOP_MS = 30_000;
/** How long close waits for abouts being written (a lost mount must not hold a shutdown). */
const CLOSE_WAIT_MS = 2_000;
const OTHER_HOST_LIVE_MS = 10 * 60_000;
/** A name's file or a live file is a line of JSON; anything larger is not ours and is skipped. */
const MAX_FILE_BYTES = 64 * 1024;
/** Names a key file may have that an --agent cannot (upper case): the roster keeps the key's own spelling. */
const ROSTER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export class Roster {
  private readonly live: string;
  private readonly liveFile: string;
  private readonly abouts: string;
  /**
   * Every about on disk, as last read; the about directory's mtime then, and
   * when this process first saw that mtime: a roster read (one per named
   * wait answer) costs one stat while no about changes, not a read per
   * name. A filesystem whose mtimes are coarser than its writes can change
   * the directory again without moving its mtime, but only within that
   * mtime's second, which ends within a second of this process first seeing
   * it, whatever the file server's clock says: a read begun a second or
   * more after that is trusted, one begun sooner is read again. A read
   * ABOUT_BACKSTOP_MS old is read again in any case (a network client may
   * cache a directory's attributes).
   */
  private aboutCache: { mtimeMs: number; names: string; seenAt: number; readAt: number; abouts: Map<string, string> } | null = null;
  /** The abouts this process is writing now: close waits for them. */
  private readonly stating = new Set<Promise<void>>();
  private closed = false;
  /** Names known to be on disk (cache for the unknownRecipients check), and when the disk was last listed. */
  private known = new Set<string>();
  private listedAt = 0;
  private readonly touched = new Map<string, number>();
  private readonly waiting = new Map<string, number>();
  private liveTimer: NodeJS.Timeout | null = null;
  private liveWritten = '';

  constructor(
    private readonly dir: string,
    private readonly log: Logger,
  ) {
    this.live = path.join(dir, '.live');
    this.liveFile = path.join(this.live, `${hostTag()}.${process.pid}`);
    this.abouts = path.join(dir, '.about');
  }

  /**
   * Record `id` stated the name's about: held unless the roster holds one
   * from a later record. Not a call by the name (an operator may have set
   * it), so last seen does not move. A failure is logged: the record is
   * stored all the same, and the next open reads it back.
   */
  stated(name: string, about: string, id: number): Promise<void> {
    if (!ROSTER_NAME.test(name) || this.closed) return Promise.resolve();
    const writing: Promise<void> = this.state(name, about, id).finally(() => this.stating.delete(writing));
    this.stating.add(writing);
    return writing;
  }

  private async state(name: string, about: string, id: number): Promise<void> {
    try {
      const held = await this.aboutOf(name);
      if (held !== null && held.id >= id) return; // most often: its writer, or another process, noted it already
      await fs.mkdir(this.abouts, { recursive: true });
      const file = path.join(this.abouts, name);
      // Every process that hears the record may note it: read and written under the name's lock, the later record's about wins.
      // The lock lies beside the about directory, not in it, so taking it moves no mtime the about cache watches.
      const write = async () => {
        if (this.closed) return; // closed while it waited for the lock: the next open reads it back
        const now = await this.aboutOf(name);
        if (now === null || now.id < id) await writeWhole(file, JSON.stringify({ about, id }) + '\n');
      };
      await withFileLock(file, write, (why) => new Error(why), { lock: path.join(this.dir, `.about.${name}.lock`), giveUp: () => this.closed });
      this.aboutCache = null;
    } catch (err) {
      if (!this.closed) this.log.warn(`cannot note ${name}'s about in the roster ${this.dir}: ${(err as Error).message}`);
    }
  }

  /** The name's about as held, or null when it has none (or its file is not ours). */
  async aboutOf(name: string): Promise<HeldAbout | null> {
    if (!ROSTER_NAME.test(name)) return null;
    const facts = await readSmall(path.join(this.abouts, name)).then((text) => JSON.parse(text) as { about?: unknown; id?: unknown }, () => null);
    if (!facts || typeof facts.about !== 'string' || !Number.isSafeInteger(facts.id)) return null;
    return { about: facts.about, id: facts.id as number };
  }

  /** The name made a call (or was given a key) now. At most one write a minute per name, here. */
  async seen(name: string, how: KnownBy): Promise<void> {
    if (!ROSTER_NAME.test(name)) return;
    const now = Date.now();
    const key = `${name}\n${how}`;
    if (now - (this.touched.get(key) ?? 0) < SEEN_EVERY_MS) return;
    this.touched.set(key, now);
    try {
      await this.record(name, how);
    } catch (err) {
      this.log.warn(`cannot note ${name} in the roster ${this.dir}: ${(err as Error).message}`);
    }
  }

  /** A wait of the name's starts here; the returned function ends it. */
  waitStarted(name: string): () => void {
    this.waiting.set(name, (this.waiting.get(name) ?? 0) + 1);
    this.scheduleLive();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.waiting.get(name) ?? 1) - 1;
      if (left > 0) this.waiting.set(name, left);
      else this.waiting.delete(name);
      this.scheduleLive();
    };
  }

  /** Whether a name is on the roster (cached; the disk is listed again at most once a second, when a name is not found). */
  async has(name: string): Promise<boolean> {
    if (this.known.has(name)) return true;
    if (Date.now() - this.listedAt >= LIVE_EVERY_MS) {
      this.listedAt = Date.now();
      this.known = new Set(await this.names());
    }
    return this.known.has(name);
  }

  /**
   * A text that changes when a name joins or leaves or an about is stated
   * anew, and not otherwise: one listing of the names and one stat of the
   * abouts, where `entries` reads every name's file. A wait asks it on
   * every answer to learn whether the roster is news.
   */
  async namesAndAbouts(): Promise<{ names: readonly string[]; text: string }> {
    const names = await this.names();
    const abouts = await this.allAbouts(names);
    return { names, text: JSON.stringify([names, [...abouts]]) };
  }

  /** Everyone on the roster, by name. */
  async entries(): Promise<RosterEntry[]> {
    const waitingNow = await this.waitingNow();
    const names = await this.names();
    const abouts = await this.allAbouts(names);
    const out: RosterEntry[] = [];
    for (const name of names) {
      const facts = await this.entryFacts(name);
      if (!facts) continue;
      const entry: RosterEntry = { name, lastSeen: facts.lastSeen.toISOString(), waiting: waitingNow.has(name), how: facts.how };
      const about = abouts.get(name);
      if (about !== undefined) entry.about = about;
      out.push(entry);
    }
    return out;
  }

  /** Whether any of these names' files reads as a roster entry now: a name passed over once (mid-write), looked at again alone. */
  async anyReadable(names: readonly string[]): Promise<boolean> {
    for (const name of names) if ((await this.entryFacts(name)) !== null) return true;
    return false;
  }

  /** How a name is known and when it was last seen; null where its file is no roster entry now (mid-write, unreadable, not ours). */
  private async entryFacts(name: string): Promise<{ how: KnownBy[]; lastSeen: Date } | null> {
    const file = path.join(this.dir, name);
    const [text, stat] = await Promise.all([readSmall(file).catch(() => null), fs.lstat(file).catch(() => null)]);
    if (text === null || !stat?.isFile()) return null;
    let facts: unknown;
    try {
      facts = JSON.parse(text);
    } catch {
      return null;
    }
    if (typeof facts !== 'object' || facts === null) return null;
    const { how } = facts as { how?: unknown };
    return { how: Array.isArray(how) ? how.filter((h): h is KnownBy => h === 'served' || h === 'signed' || h === 'key') : [], lastSeen: stat.mtime };
  }

  /**
   * The about of every name on the roster, shown as it may be (printable,
   * capped), from the cache while the about directory and the names have not
   * changed. Only names on the roster are read: abouts of names that never
   * served, signed or had a key here (records a pull brought, an operator's
   * `agents about`) are kept on disk for when the name comes, and cost a wait
   * nothing until then.
   */
  private async allAbouts(names?: readonly string[]): Promise<Map<string, string>> {
    const stat = await fs.stat(this.abouts).catch(() => null);
    if (!stat) return new Map();
    const onRoster = names ?? (await this.names());
    const namesKey = onRoster.join('\n');
    const cached = this.aboutCache;
    const readAt = performance.now(); // a monotonic clock: a wall clock stepped back must not stretch the backstop
    const same = cached !== null && cached.mtimeMs === stat.mtimeMs && cached.names === namesKey;
    const seenAt = same ? cached.seenAt : readAt;
    if (same && cached.readAt >= seenAt + COARSE_MTIME_MS && readAt - cached.readAt < ABOUT_BACKSTOP_MS) return cached.abouts;
    const abouts = new Map<string, string>();
    const held = new Set(await fs.readdir(this.abouts).catch(() => [] as string[]));
    for (const name of onRoster) {
      if (!held.has(name)) continue;
      const about = await this.aboutOf(name);
      const shown = about === null ? '' : shownAbout(about.about);
      if (shown !== '') abouts.set(name, shown);
    }
    this.aboutCache = { mtimeMs: stat.mtimeMs, names: namesKey, seenAt, readAt, abouts };
    return abouts;
  }

  /** Waits for the abouts being written, then removes this process's live file (a clean close). */
  async close(): Promise<void> {
    this.closed = true;
    // An about not written by then comes back from its record at the next open (abouts.ts).
    if (this.stating.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.stating]), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
    }
    if (this.liveTimer) clearTimeout(this.liveTimer);
    this.liveTimer = null;
    if (this.liveWritten !== '') await fs.unlink(this.liveFile).catch(() => {});
  }

  private async names(): Promise<string[]> {
    const names = await fs.readdir(this.dir).catch(() => [] as string[]);
    return names.filter((name) => ROSTER_NAME.test(name)).sort().slice(0, MAX_NAMES);
  }

  /** Creates the name's file once (O_EXCL), adds a new way it is known by a rename, or only moves its mtime. */
  private async record(name: string, how: KnownBy): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    const file = path.join(this.dir, name);
    const text = await readSmall(file).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : Promise.reject(err)));
    if (text === null) {
      if ((await this.names()).length >= MAX_NAMES) return this.log.warn(`the roster ${this.dir} holds ${MAX_NAMES} names; ${name} is not added`);
      const handle = await fs.open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST') return null;
        throw err;
      });
      if (handle) {
        await handle.writeFile(JSON.stringify({ name, how: [how] }) + '\n');
        await handle.close();
        this.known.add(name);
        return;
      }
      return this.record(name, how); // another process made it first: look again
    }
    const facts = JSON.parse(text) as { how?: KnownBy[] };
    if (!Array.isArray(facts.how) || !facts.how.includes(how)) {
      await writeWhole(file, JSON.stringify({ name, how: [...(Array.isArray(facts.how) ? facts.how : []), how] }) + '\n');
    } else if (how !== 'key') {
      // Holding a key is not being seen: only a call moves lastSeen.
      const now = new Date();
      await fs.utimes(file, now, now);
    }
    this.known.add(name);
  }

  private scheduleLive(): void {
    if (this.liveTimer) return;
    this.liveTimer = setTimeout(() => {
      this.liveTimer = null;
      void this.writeLive();
    }, LIVE_EVERY_MS);
    this.liveTimer.unref();
  }

  private async writeLive(): Promise<void> {
    const names = [...this.waiting.keys()].sort();
    const text = JSON.stringify({ waiting: names }) + '\n';
    if (text === this.liveWritten) return;
    try {
      await fs.mkdir(this.live, { recursive: true });
      await writeWhole(this.liveFile, text);
      this.liveWritten = text;
    } catch (err) {
      this.log.warn(`cannot write ${this.liveFile}: ${(err as Error).message}`);
    }
  }

  /** The names waiting now in any live process (this one's from memory, the others' from their live files). */
  private async waitingNow(): Promise<Set<string>> {
    const out = new Set(this.waiting.keys());
    const here = hostIdentity();
    for (const entry of await fs.readdir(this.live).catch(() => [] as string[])) {
      const m = /^([A-Za-z0-9_-]+)\.([0-9a-z]+)\.(\d+)$/.exec(entry);
      const file = path.join(this.live, entry);
      if (!m || file === this.liveFile) continue;
      const where = whereabouts(m[1]!, m[2]!, here);
      if (where === 'earlier-boot' || (where === 'this-boot' && !pidAlive(Number(m[3])))) {
        await fs.unlink(file).catch(() => {});
        continue;
      }
      if (where === 'other-host') {
        const stat = await fs.lstat(file).catch(() => null);
        if (!stat || Date.now() - stat.mtimeMs > OTHER_HOST_LIVE_MS) continue;
      }
      const facts = await readSmall(file).then((text) => JSON.parse(text) as { waiting?: unknown }, () => null);
      if (facts && Array.isArray(facts.waiting)) for (const name of facts.waiting) if (typeof name === 'string') out.add(name);
    }
    return out;
  }
}

/** A small regular file's text (lib/disk/state-file.ts); rejected with ENOENT when missing, and when it is anything else. */
async function readSmall(file: string): Promise<string> {
  const got = await readStateFile(file, { max: MAX_FILE_BYTES });
  if (got.kind === 'missing') throw Object.assign(new Error(`${file} is missing`), { code: 'ENOENT' });
  if (got.kind === 'odd') throw new Error(`${file} ${got.what}: not a roster file`);
  return got.bytes.toString('utf8');
}

/** Temp name beside it (unguessable, exclusive), then rename. */
async function writeWhole(file: string, text: string): Promise<void> {
  const temp = tempBeside(file);
  await fs.writeFile(temp, text, { flag: 'wx', mode: 0o600 });
  await fs.rename(temp, file).catch(async (err: unknown) => {
    await fs.unlink(temp).catch(() => {});
    throw err;
  });
}
