/**
 * An agent's marks (spec §8d): one per agent and filter set, under
 * `.state/marks/<agent>/<filter key>`, shared by every process on this
 * machine's corpus (wait_for_relay without after, `inbox`, pushes).
 *
 * Where a new mark starts. Every mark of an agent starts at the agent's
 * first start: the store's head when the relay first knew the name (a hub
 * that opens holding its key, or sees its key made; a named stdio server
 * that starts; else its first call, wait, push or `inbox` run), written
 * once to `.state/marks/<agent>/.start` and never moved. A new mark
 * delivers what names the agent from the start of the store, and anything
 * else (a broadcast to `all`) from that start: `after` 0,
 * `namedOnlyThrough` the start. So a question put to bob before bob ever ran
 * reaches him, a newcomer is not handed every broadcast the swarm ever
 * settled, and a filter set first used later (a new `inbox --to` list, a new
 * filter on a wait) still gets the broadcasts that landed since the agent
 * started. A mark keeps its start in its file for good, so receipts never
 * count a broadcast from before it.
 *
 * A mark is written only when it moves (a first delivery proved), and an
 * agent keeps at most MAX_SETS_PER_AGENT of them: making one more removes
 * the one least recently moved (a set used again after that starts over
 * from the agent's start: delivered again, never lost).
 *
 * Before filter sets, `inbox` kept one mark per agent in the file
 * `.state/marks/<agent>`. The first use of that agent's marks moves it to
 * `.state/marks/<agent>@legacy` (no agent name holds '@') to make room for
 * the directory, and it seeds each filter set that has no mark yet: what it
 * delivered is not delivered again. It is never written after that.
 *
 * A mark only moves forward: its read-modify-write holds a lock across
 * processes (file-lock.ts; two servers of one agent at once), and a single
 * delivery above it (a push) is kept in its `delivered` line until the mark
 * passes it.
 *
 * A mark read for a delivery must not be ahead of the store (a corpus put
 * back from an older copy, a mark written by hand): a delivery from it would
 * skip, silently and for good, every record that lands up to it. It is
 * checked as a wait's `after` is (after-mark.ts), and refused `bad_mark`,
 * since the agent passed no id it could correct: the file is what is wrong.
 * A refusal names the mark from the corpus (`.state/marks/bob/to=all,bob`),
 * never by this machine's absolute path, and fails only the call that needs
 * that mark.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import { filterKey, filterText } from './filter-key.js';
import { badMark, createMarkFile, formatMark, MAX_DELIVERED, readMarkFile, syncDirectory, writeMarkFile, type Mark } from './mark-file.js';
import { MarkIndex } from './mark-index.js';
import { withFileLock } from './file-lock.js';

const LEGACY = '@legacy';
/** The agent's first start, beside its marks (a dot file: no listing takes it for a mark). */
const START = '.start';
/** Filter sets with a mark, per agent: making one more removes the least recently moved. */
export const MAX_SETS_PER_AGENT = 64;

export class AgentMarks {
  /** Writes to one mark file go one at a time in this process (the lock serialises processes). */
  private readonly writing = new Map<string, Promise<unknown>>();
  /** Agents whose directory is known to be in place (and any legacy mark moved aside). */
  private readonly ready = new Set<string>();
  /** Each agent's first start, once read or written. */
  private readonly starts = new Map<string, number>();
  /** What receipts read, kept current by stat (mark-index.ts). */
  private readonly index: MarkIndex;

  constructor(
    private readonly dir: string,
    private readonly shape: IdShape,
    /** The store's highest id now: where an agent's first start is. */
    private readonly head: () => number,
    private readonly log: Logger,
    /** Resolves when the store has reached id `n`; refuses `id_ahead` when a delivery after it would skip (RelayStore.markOf). */
    private readonly reached: (n: number) => Promise<unknown> = async () => {},
  ) {
    this.index = new MarkIndex(dir, shape);
  }

  /** The mark's path (the agent name is of the checked shape: it names a directory). */
  file(agent: string, filter: RecordFilter | null): string {
    return path.join(this.dir, agent, filterKey(filter, this.shape));
  }

  /** How a refusal names a path under the marks: from the corpus, never this machine's absolute path. */
  shown(file: string): string {
    return path.join('.state', 'marks', path.relative(this.dir, file));
  }

  /** The agent's mark for this filter set; a set with no mark yet starts at the agent's first start (written now if it has none). */
  async read(agent: string, filter: RecordFilter | null): Promise<Mark> {
    await this.prepare(agent);
    const file = this.file(agent, filter);
    return (await this.vouched(this.shown(file), await readMarkFile(file, this.shape, this.shown(file)))) ?? (await this.fresh(agent, true));
  }

  /** The mark as it is, or as it would be made now; nothing is written (inbox --peek). */
  async current(agent: string, filter: RecordFilter | null): Promise<Mark> {
    const file = this.file(agent, filter);
    return (await this.vouched(this.shown(file), await readMarkFile(file, this.shape, this.shown(file)))) ?? (await this.fresh(agent, false));
  }

  /**
   * Records the agent's first start, if it has none yet: `at` (the head when
   * the relay came to know the name), or the store's head now.
   */
  async begin(agent: string, at?: number): Promise<void> {
    if (this.starts.has(agent)) return;
    await this.prepare(agent);
    await this.start(agent, true, at);
  }

  /** A mark read for a delivery (named `shown` in a refusal), refused bad_mark when it is ahead of the store. */
  async vouched(shown: string, mark: Mark | null): Promise<Mark | null> {
    if (mark === null) return null;
    try {
      await this.reached(Math.max(mark.after, mark.namedOnlyThrough));
    } catch (err) {
      if (!(err instanceof RelayError && err.code === 'id_ahead')) throw err;
      throw badMark(shown, `it says ${this.shape.format(Math.max(mark.after, mark.namedOnlyThrough))}, ahead of this store (the newest id it has reached is ` +
        `${String(err.details.newest)}), so a delivery from it would skip every record that lands up to it`);
    }
    return mark;
  }

  /** The agents that have marks here (at most MAX_AGENTS_LISTED, by name). */
  agents(): Promise<string[]> {
    return this.index.agentNames();
  }

  /**
   * Whether one of the agent's marks on a set of `to:` names has delivered
   * record `n`, whose to: names `recipients`: a `to=…` set sharing a name
   * with them, that passed it (and did not start after it for a record not
   * naming the agent) or delivered it one by one. A mark that cannot be read
   * counts for nothing.
   */
  async covers(agent: string, n: number, recipients: readonly string[]): Promise<boolean> {
    const names = new Set(recipients);
    for (const [key, { mark }] of await this.index.toSets(agent)) {
      if (!mark || !key.slice(3).split(',').some((name) => names.has(name))) continue;
      if (mark.delivered.includes(n) || (n <= mark.after && (n > mark.namedOnlyThrough || names.has(agent)))) return true;
    }
    return false;
  }

  /** Counts every record up to `through` as delivered (a wait's cursor, an inbox run's last id). */
  deliverThrough(agent: string, filter: RecordFilter | null, through: number): Promise<Mark> {
    return this.update(agent, filter, (mark) => (through > mark.after ? { ...mark, after: through, delivered: mark.delivered.filter((n) => n > through) } : mark));
  }

  /** Counts these records as delivered one by one (a push), leaving the rest of the set where it was. */
  deliverIds(agent: string, filter: RecordFilter | null, ids: number[]): Promise<Mark> {
    return this.update(agent, filter, (mark) => {
      const fresh = ids.filter((n) => n > mark.after && !mark.delivered.includes(n));
      if (fresh.length === 0) return mark;
      const delivered = [...mark.delivered, ...fresh].sort((a, b) => a - b);
      return { ...mark, delivered: delivered.slice(-MAX_DELIVERED) };
    });
  }

  /**
   * Read, change, write: one at a time per file here, under the mark's lock
   * across processes, so the change always applies to what is on disk and a
   * mark never moves back. Nothing is written when nothing changed.
   */
  private update(agent: string, filter: RecordFilter | null, change: (mark: Mark) => Mark): Promise<Mark> {
    const file = this.file(agent, filter);
    const shown = this.shown(file);
    const before = this.writing.get(file) ?? Promise.resolve();
    const mine = before.catch(() => {}).then(async () => {
      await this.prepare(agent);
      return withFileLock(file, async () => {
        const existing = await this.vouched(shown, await readMarkFile(file, this.shape, shown));
        const onDisk = existing ?? (await this.fresh(agent, true));
        const next = change(onDisk);
        if (next === onDisk) return onDisk;
        if (!existing) await this.makeRoom(agent);
        await writeMarkFile(file, formatMark(next, this.shape, filterText(filter, this.shape)), shown);
        return next;
      }, (why) => badMark(shown, why));
    });
    this.writing.set(file, mine);
    void mine.catch(() => {}).finally(() => {
      if (this.writing.get(file) === mine) this.writing.delete(file);
    });
    return mine;
  }

  /** Before a new mark is made: the agent's least recently moved marks go, so it keeps at most MAX_SETS_PER_AGENT. */
  private async makeRoom(agent: string): Promise<void> {
    const dir = path.join(this.dir, agent);
    const keys = (await fs.readdir(dir)).filter((key) => !key.startsWith('.'));
    if (keys.length < MAX_SETS_PER_AGENT) return;
    const aged = await Promise.all(keys.map(async (key) => ({ key, mtime: (await fs.lstat(path.join(dir, key)).catch(() => null))?.mtimeMs ?? 0 })));
    aged.sort((a, b) => a.mtime - b.mtime);
    for (const { key } of aged.slice(0, keys.length - MAX_SETS_PER_AGENT + 1)) {
      await fs.unlink(path.join(dir, key)).catch(() => {});
      this.log.info(`removed ${agent}'s mark ${key}, the least recently moved of ${keys.length}: an agent keeps at most ${MAX_SETS_PER_AGENT}`);
    }
  }

  /** A new mark: from the legacy mark if the agent had one, else named records from the start and the rest from the agent's first start. */
  private async fresh(agent: string, write: boolean): Promise<Mark> {
    const legacy = await this.legacy(agent);
    const start = await this.start(agent, write);
    if (legacy) return { after: legacy.after, namedOnlyThrough: Math.max(start, legacy.after), delivered: [] };
    return { after: 0, namedOnlyThrough: start, delivered: [] };
  }

  private legacy(agent: string): Promise<Mark | null> {
    return readMarkFile(path.join(this.dir, agent + LEGACY), this.shape).catch((err: unknown) => {
      this.log.warn(`ignoring ${agent}${LEGACY}: ${(err as Error).message}`);
      return null;
    });
  }

  /**
   * The agent's first start: read from `.start`, or, the first time, the
   * earliest start its marks already hold (a corpus from before `.start`),
   * else its legacy mark, else `at` (when the relay came to know the name),
   * else the store's head, written with O_EXCL so that
   * two processes starting at once agree on one. `write` false: a peek,
   * which writes nothing.
   */
  private async start(agent: string, write: boolean, at?: number): Promise<number> {
    const known = this.starts.get(agent);
    if (known !== undefined) return known;
    const file = path.join(this.dir, agent, START);
    const shown = this.shown(file);
    const onDisk = await this.vouched(shown, await readMarkFile(file, this.shape, shown));
    if (onDisk) {
      this.starts.set(agent, onDisk.after);
      return onDisk.after;
    }
    const value = (await this.earliestStart(agent)) ?? (await this.legacy(agent))?.after ?? at ?? this.head();
    if (!write) return value;
    if (!(await createMarkFile(file, `${this.shape.format(value)}\n`))) return this.start(agent, write, at); // another process wrote it first
    this.starts.set(agent, value);
    return value;
  }

  /** The earliest start the agent's marks hold (0 and unreadable marks say nothing), or null. */
  private async earliestStart(agent: string): Promise<number | null> {
    const dir = path.join(this.dir, agent);
    let earliest: number | null = null;
    for (const key of await fs.readdir(dir).catch(() => [] as string[])) {
      if (key.startsWith('.')) continue;
      const mark = await readMarkFile(path.join(dir, key), this.shape).catch(() => null);
      if (mark && mark.namedOnlyThrough > 0 && (earliest === null || mark.namedOnlyThrough < earliest)) earliest = mark.namedOnlyThrough;
    }
    return earliest;
  }

  /** The agent's directory, made once; a legacy mark file in its place is moved aside first. */
  private async prepare(agent: string): Promise<void> {
    if (this.ready.has(agent)) return;
    const dir = path.join(this.dir, agent);
    const stat = await fs.lstat(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (stat?.isSymbolicLink()) throw badMark(this.shown(dir), 'it is a symbolic link, and an agent\'s marks are kept in a directory of their own');
    if (stat && stat.isFile()) {
      await fs.rename(dir, dir + LEGACY).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err; // another process moved it first
      });
      this.log.info(`moved the mark ${this.shown(dir)} aside to ${agent}${LEGACY}: marks are kept per filter set now, and it seeds the new ones`);
    } else if (stat && !stat.isDirectory()) throw badMark(this.shown(dir), 'it is not a directory (a FIFO, a device or a socket)');
    // A new agent's directory is a new entry in .state/marks/: synced, as its first mark will be (mark-file.ts).
    if (!stat?.isDirectory()) {
      // Level by level from .state/, never the corpus itself: a corpus moved away while the relay serves must stay
      // gone (no_corpus), not come back empty because a name was noted.
      for (const level of [path.dirname(this.dir), this.dir, dir]) {
        await fs.mkdir(level, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
      }
      await syncDirectory(this.dir);
    }
    this.ready.add(agent);
  }
}
