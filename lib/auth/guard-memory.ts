/**
 * Since when the one-time signature guard remembers (spec §10). The guard's
 * memory is `.state/replay/`; `git clean -x`, a restore or a re-clone
 * removes it, and a guard that simply started again would accept a
 * captured request a second time.
 *
 * So the directory records when it began: `.state/replay/.since` holds the
 * unix second its memory starts. A directory without the file was made by
 * `init` with the store, and remembers from the start (0). A directory that
 * is missing is memory lost: it is made again, atomically with its `.since`
 * (built under a temp name, then renamed into place, so every process reads
 * the same second), and the guard refuses any signature whose ts is before
 * since + 60 s — a signature accepted before the loss had a ts at most 60 s
 * after its acceptance, so only those can be in what was forgotten.
 *
 * Except in a store that holds no record: every append a signature bought
 * left one, so with none there is nothing a replay could repeat, and the
 * memory begins from the start as `init`'s does. That is the shipped
 * `./corpus` of a fresh clone, which has no `.state/` at all.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { tempBeside } from '../disk/paths.js';
import { readStateText } from '../disk/state-file.js';

export const SINCE_FILE = '.since';

export interface GuardMemory {
  /** The unix second the guard's memory begins (0: since the store was made). */
  since: number;
  /** The directory's inode: a different one later means it was replaced. */
  ino: number;
}

/**
 * Reads (or, when the directory is gone, begins) the guard's memory.
 * `holdsRecords` says whether the store holds any record now; asked only
 * when the memory must begin. Throws ENOENT when the corpus itself is gone.
 */
export async function guardMemory(dir: string, nowS: number, holdsRecords: () => Promise<boolean>): Promise<GuardMemory> {
  for (let attempt = 0; ; attempt++) {
    const found = await read(dir);
    if (found !== null || attempt > 0) {
      if (found === null) throw Object.assign(new Error(`${dir} vanished while it was being made`), { code: 'ENOENT' });
      return found;
    }
    await begin(dir, (await holdsRecords()) ? nowS : null);
  }
}

async function read(dir: string): Promise<GuardMemory | null> {
  let ino: number;
  try {
    ino = (await fs.stat(dir)).ino;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  // A .since that is no small regular file (a FIFO, a symlink) is read as none: memory from the start, as a missing one says.
  const got = await readStateText(path.join(dir, SINCE_FILE));
  const text = typeof got === 'string' ? got : '0';
  return { since: Number(text.trim()) || 0, ino };
}

/**
 * Makes the directory with its .since in one rename (none: remembers from
 * the start); if another process got there first, theirs stands.
 */
async function begin(dir: string, sinceS: number | null): Promise<void> {
  const parent = path.dirname(dir);
  // Not recursive from the corpus down: a corpus that is gone must stay a refusal.
  await fs.mkdir(parent).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'EEXIST') throw e;
  });
  const temp = tempBeside(dir);
  await fs.mkdir(temp);
  try {
    if (sinceS !== null) await fs.writeFile(path.join(temp, SINCE_FILE), `${sinceS}\n`);
    await fs.rename(temp, dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
  } finally {
    await fs.rm(temp, { recursive: true, force: true });
  }
}
