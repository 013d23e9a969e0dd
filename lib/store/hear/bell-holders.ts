/**
 * Who holds which doorbell, so that the bells of a process that died can go.
 *
 * A bell (bells.ts) is one file per name, shared by every process on this
 * machine that listens for the name, and a process lets go of what it made
 * when it stops listening. A process killed with SIGKILL (or by the OOM
 * killer, or a power cut) lets go of nothing, so its bells would stay for
 * good. Each Bells instance therefore keeps a holder directory, one empty
 * marker per bell it holds, written before the bell is made:
 *
 *   .state/bell-holders/<host>.<boot>.<pid>.<n>/<bell file name>
 *
 * A sweep (sweepBells) removes the holder directories of processes that are
 * gone (this host and boot with the pid not running, or an earlier boot), and
 * then each bell no remaining holder marks and nobody has made or rung for
 * SWEEP_GRACE_MS. The grace covers a listener between writing its marker and
 * making its bell, as the sweep read the markers; a bell removed under a live
 * listener anyway (an older version that writes no marker) is made again by
 * it (bells.ts rearm), at the cost of a look. Holders on other hosts (a
 * `.state/` on a shared mount) are left alone, and their markers count as held.
 */
import { rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { hostTag, pidAlive, whereabouts } from '../../disk/host.js';

/** The holder directories' directory, beside the bells' own: `.state/bells/` holds bells only. */
export function holdersRoot(bellsDir: string): string {
  return path.join(path.dirname(bellsDir), 'bell-holders');
}
/** A bell made or rung this recently is never swept. */
export const SWEEP_GRACE_MS = 60_000;
/** Bell files are 32 hex digits (bell-keys.ts bellFile); anything else in the directory is not swept. */
const BELL_NAME = /^[0-9a-f]{32}$/;

/** Two stores in one process on one corpus hold bells separately. */
let instances = 0;

/** This instance's markers: one per bell it holds. */
export class BellHolders {
  readonly dir: string;

  constructor(bellsDir: string) {
    this.dir = path.join(holdersRoot(bellsDir), `${hostTag()}.${process.pid}.${++instances}`);
  }

  /** Marks the bell file `name` held here (made again with its directory when `.state/` was removed). */
  async hold(name: string): Promise<void> {
    const marker = path.join(this.dir, name);
    try {
      await fs.writeFile(marker, '');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await fs.mkdir(this.dir, { recursive: true });
      await fs.writeFile(marker, '');
    }
  }

  /** The bell is let go; a marker that cannot be removed only keeps one bell from a sweep. */
  async drop(name: string): Promise<void> {
    await fs.unlink(path.join(this.dir, name)).catch(() => {});
  }

  /** At close, when the process may exit next: every marker at once. */
  dropAll(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface Swept {
  /** Holder directories of processes that are gone. */
  holders: number;
  /** Bell files nobody held. */
  bells: number;
}

/** Removes the dead's holder directories, then every bell past its grace that no live holder marks; stops early once `stopped()`. */
export async function sweepBells(bellsDir: string, now = Date.now(), stopped: () => boolean = () => false): Promise<Swept> {
  const heldRoot = holdersRoot(bellsDir);
  const held = new Set<string>();
  const swept: Swept = { holders: 0, bells: 0 };
  for (const holder of await names(heldRoot)) {
    if (stopped()) return swept;
    const dir = path.join(heldRoot, holder);
    if (isGone(holder)) {
      await fs.rm(dir, { recursive: true, force: true });
      swept.holders++;
      continue;
    }
    for (const marker of await names(dir)) held.add(marker);
  }
  for (const name of await names(bellsDir)) {
    if (stopped()) return swept;
    if (!BELL_NAME.test(name) || held.has(name)) continue;
    const file = path.join(bellsDir, name);
    const stat = await fs.lstat(file).catch(() => null);
    // A bell's mtime is when it was made or last rung (bells.ts ring).
    if (!stat?.isFile() || now - stat.mtimeMs < SWEEP_GRACE_MS) continue;
    if (await fs.unlink(file).then(() => true, () => false)) swept.bells++;
  }
  return swept;
}

/** A holder named `<host>.<boot>.<pid>.<n>` whose process is known to be gone; false for any other name. */
function isGone(holder: string): boolean {
  const parts = holder.split('.');
  if (parts.length !== 4 || !/^\d+$/.test(parts[2]!)) return false;
  const where = whereabouts(parts[0]!, parts[1]!);
  return where === 'earlier-boot' || (where === 'this-boot' && !pidAlive(Number(parts[2])));
}

async function names(dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
}
