/**
 * The marks receipts read (spec §8d `deliveredTo`), held in memory and kept
 * current by looking, not by reading: a receipt costs one lstat of
 * `.state/marks/` and one per agent it asks about, and a mark file is read
 * again only when it changed. An unsigned list_replies can be asked as often
 * as anyone likes, so its cost must not grow with the marks on disk.
 *
 * Every mark is written by renaming a new file over it (mark-file.ts), which
 * changes its directory's mtime and gives the file a new inode, so a
 * directory whose mtime is unchanged holds the marks it held. Timestamps
 * come from a coarse clock, and a change within the same tick as a look
 * would leave the mtime unchanged: a stamp younger than RACY_MS is not
 * trusted, and is looked at again next time.
 */
import type { BigIntStats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { IdShape } from '../../model/ids.js';
import { readMarkFile, type Mark } from './mark-file.js';

/** A stamp younger than this may hide a change made in the same clock tick. */
const RACY_MS = 100;
/** Receipts look through at most this many agents' marks. */
export const MAX_AGENTS_LISTED = 1_000;

interface Stamp {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  /** Old enough that an unchanged stamp means unchanged contents. */
  settled: boolean;
}

interface AgentEntry {
  dir: Stamp;
  /** The agent's marks on a set of `to:` names only (what receipts ask), by key; null: unreadable. */
  sets: Map<string, { stamp: Stamp; mark: Mark | null }>;
}

export class MarkIndex {
  private root: { stamp: Stamp; agents: string[] } | null = null;
  private readonly agents = new Map<string, AgentEntry>();

  constructor(
    private readonly dir: string,
    private readonly shape: IdShape,
  ) {}

  /** The agents that have marks here (at most MAX_AGENTS_LISTED, by name). */
  async agentNames(): Promise<string[]> {
    const st = await fs.lstat(this.dir, { bigint: true }).catch(() => null);
    if (!st?.isDirectory()) return [];
    if (this.root && unchanged(this.root.stamp, st)) return this.root.agents;
    const entries = await fs.readdir(this.dir, { withFileTypes: true }).catch(() => []);
    const agents = entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name).sort().slice(0, MAX_AGENTS_LISTED);
    this.root = { stamp: stampOf(st), agents };
    for (const name of this.agents.keys()) if (!agents.includes(name)) this.agents.delete(name);
    return agents;
  }

  /** The agent's marks on a set of `to:` names (keys `to=…` with no other filter), as they are on disk now. */
  async toSets(agent: string): Promise<ReadonlyMap<string, { mark: Mark | null }>> {
    const dir = path.join(this.dir, agent);
    const st = await fs.lstat(dir, { bigint: true }).catch(() => null);
    if (!st?.isDirectory()) {
      this.agents.delete(agent);
      return new Map();
    }
    const known = this.agents.get(agent);
    if (known && unchanged(known.dir, st)) return known.sets;
    const keys = (await fs.readdir(dir).catch(() => [] as string[])).filter((key) => key.startsWith('to=') && !key.includes(';'));
    const sets = new Map<string, { stamp: Stamp; mark: Mark | null }>();
    for (const key of keys) {
      const file = path.join(dir, key);
      const fst = await fs.lstat(file, { bigint: true }).catch(() => null);
      if (!fst) continue;
      const before = known?.sets.get(key);
      if (before && unchanged(before.stamp, fst)) sets.set(key, before);
      else sets.set(key, { stamp: stampOf(fst), mark: await readMarkFile(file, this.shape).catch(() => null) });
    }
    this.agents.set(agent, { dir: stampOf(st), sets });
    return sets;
  }
}

function stampOf(st: BigIntStats): Stamp {
  return { ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, settled: Date.now() - Number(st.mtimeNs / 1_000_000n) > RACY_MS };
}

function unchanged(stamp: Stamp, st: BigIntStats): boolean {
  return stamp.settled && stamp.ino === st.ino && stamp.size === st.size && stamp.mtimeNs === st.mtimeNs;
}
