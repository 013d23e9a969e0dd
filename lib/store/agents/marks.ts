/**
 * An agent's marks (spec §8d): one per agent and filter set, under
 * `.state/marks/<agent>/<filter key>`, shared by every process on this
 * machine's corpus (wait_for_relay without after, `inbox`, pushes).
 *
 * A new mark delivers what names the agent from the start of the store, and
 * anything else (a broadcast to `all`) only from the store's head when the
 * mark was made: `after` 0, `namedOnlyThrough` the head. So a question put to
 * bob before bob ever ran reaches him, and a newcomer is not handed every
 * broadcast the swarm ever settled.
 *
 * Before filter sets, `inbox` kept one mark per agent in the file
 * `.state/marks/<agent>`. The first use of that agent's marks moves it to
 * `.state/marks/<agent>@legacy` (no agent name holds '@') to make room for
 * the directory, and it seeds each filter set that has no mark yet: what it
 * delivered is not delivered again. It is never written after that.
 *
 * A mark only moves forward: a write takes the larger of what it holds and
 * what is on disk (two servers of one agent at once), and a single delivery
 * above it (a push) is kept in its `delivered` line until the mark passes it.
 *
 * A mark read for a delivery must not be ahead of the store (a corpus put
 * back from an older copy, a mark written by hand): a delivery from it would
 * skip, silently and for good, every record that lands up to it. It is
 * checked as a wait's `after` is (after-mark.ts), and refused `bad_mark`,
 * since the agent passed no id it could correct: the file is what is wrong.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import { filterKey, filterText } from './filter-key.js';
import { badMark, formatMark, MAX_DELIVERED, readMarkFile, syncDirectory, writeMarkFile, type Mark } from './mark-file.js';

const LEGACY = '@legacy';
/** Receipts look through at most this many agents' marks. */
const MAX_AGENTS_LISTED = 1_000;

export class AgentMarks {
  /** Writes to one mark file go one at a time in this process, so a read-modify-write never loses a move. */
  private readonly writing = new Map<string, Promise<unknown>>();
  /** Agents whose directory is known to be in place (and any legacy mark moved aside). */
  private readonly ready = new Set<string>();

  constructor(
    private readonly dir: string,
    private readonly shape: IdShape,
    /** The store's highest id now: where a new mark's broadcasts start. */
    private readonly head: () => number,
    private readonly log: Logger,
    /** Resolves when the store has reached id `n`; refuses `id_ahead` when a delivery after it would skip (RelayStore.markOf). */
    private readonly reached: (n: number) => Promise<unknown> = async () => {},
  ) {}

  /** The mark's path (the agent name is of the checked shape: it names a directory). */
  file(agent: string, filter: RecordFilter | null): string {
    return path.join(this.dir, agent, filterKey(filter, this.shape));
  }

  /**
   * The agent's mark for this filter set, made (and written, so that a
   * server killed before its first delivery keeps the same start) if there
   * is none yet.
   */
  async read(agent: string, filter: RecordFilter | null): Promise<Mark> {
    await this.prepare(agent);
    const file = this.file(agent, filter);
    const mark = await this.vouched(file, await readMarkFile(file, this.shape));
    if (mark) return mark;
    return this.update(agent, filter, (current) => current);
  }

  /** The mark as it is, or as it would be made now; nothing is written (inbox --peek). */
  async current(agent: string, filter: RecordFilter | null): Promise<Mark> {
    const file = this.file(agent, filter);
    return (await this.vouched(file, await readMarkFile(file, this.shape))) ?? (await this.fresh(agent));
  }

  /** A mark read from `file` for a delivery, refused bad_mark when it is ahead of the store. */
  async vouched(file: string, mark: Mark | null): Promise<Mark | null> {
    if (mark === null) return null;
    try {
      await this.reached(mark.after);
    } catch (err) {
      if (!(err instanceof RelayError && err.code === 'id_ahead')) throw err;
      throw badMark(file, `it says ${this.shape.format(mark.after)}, ahead of this store (the newest id it has reached is ` +
        `${String(err.details.newest)}), so a delivery from it would skip every record that lands up to it`);
    }
    return mark;
  }

  /** The agents that have marks here (at most MAX_AGENTS_LISTED, by name). */
  async agents(): Promise<string[]> {
    const entries = await fs.readdir(this.dir, { withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name).sort().slice(0, MAX_AGENTS_LISTED);
  }

  /**
   * Whether one of the agent's marks on a set of `to:` names has delivered
   * record `n`, whose to: names `recipients`: a `to=…` set sharing a name
   * with them, that passed it (and did not start after it for a record not
   * naming the agent) or delivered it one by one.
   */
  async covers(agent: string, n: number, recipients: readonly string[]): Promise<boolean> {
    const names = new Set(recipients);
    const keys = await fs.readdir(path.join(this.dir, agent)).catch(() => [] as string[]);
    for (const key of keys) {
      if (!key.startsWith('to=') || key.includes(';')) continue;
      if (!key.slice(3).split(',').some((name) => names.has(name))) continue;
      const mark = await readMarkFile(path.join(this.dir, agent, key), this.shape).catch(() => null);
      if (!mark) continue;
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
      const delivered = [...new Set([...mark.delivered, ...ids.filter((n) => n > mark.after)])].sort((a, b) => a - b);
      return { ...mark, delivered: delivered.slice(-MAX_DELIVERED) };
    });
  }

  /** Read, change, write: one at a time per file here, and never behind what another process wrote meanwhile. */
  private update(agent: string, filter: RecordFilter | null, change: (mark: Mark) => Mark): Promise<Mark> {
    const file = this.file(agent, filter);
    const before = this.writing.get(file) ?? Promise.resolve();
    const mine = before.catch(() => {}).then(async () => {
      await this.prepare(agent);
      const onDisk = (await readMarkFile(file, this.shape)) ?? (await this.fresh(agent));
      const next = change(onDisk);
      if (next === onDisk && (await fileExists(file))) return onDisk;
      await writeMarkFile(file, formatMark(next, this.shape, filterText(filter, this.shape)));
      return next;
    });
    this.writing.set(file, mine);
    void mine.catch(() => {}).finally(() => {
      if (this.writing.get(file) === mine) this.writing.delete(file);
    });
    return mine;
  }

  /** A new mark: from the legacy mark if the agent had one, else named records from the start and the rest from the head. */
  private async fresh(agent: string): Promise<Mark> {
    const legacy = await readMarkFile(path.join(this.dir, agent + LEGACY), this.shape).catch((err: unknown) => {
      this.log.warn(`ignoring ${agent}${LEGACY}: ${(err as Error).message}`);
      return null;
    });
    if (legacy) return { after: legacy.after, namedOnlyThrough: legacy.after, delivered: [] };
    return { after: 0, namedOnlyThrough: this.head(), delivered: [] };
  }

  /** The agent's directory, made once; a legacy mark file in its place is moved aside first. */
  private async prepare(agent: string): Promise<void> {
    if (this.ready.has(agent)) return;
    const dir = path.join(this.dir, agent);
    const stat = await fs.lstat(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (stat?.isSymbolicLink()) throw badMark(dir, 'it is a symbolic link, and an agent\'s marks are kept in a directory of their own');
    if (stat && stat.isFile()) {
      await fs.rename(dir, dir + LEGACY).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err; // another process moved it first
      });
      this.log.info(`moved the mark ${dir} aside to ${agent}${LEGACY}: marks are kept per filter set now, and it seeds the new ones`);
    } else if (stat && !stat.isDirectory()) throw badMark(dir, 'it is not a directory (a FIFO, a device or a socket)');
    // A new agent's directory is a new entry in .state/marks/: synced, as its first mark will be (mark-file.ts).
    if (!stat?.isDirectory()) {
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      await syncDirectory(this.dir);
    }
    this.ready.add(agent);
  }
}

async function fileExists(file: string): Promise<boolean> {
  return fs.lstat(file).then(() => true, () => false);
}
