/**
 * Whose is a temp file under `.state/tmp/`, judged by its name (paths.ts
 * tempName: host, boot, pid): a dead writer's of this host (safe to remove),
 * a live process's of this host, or another host's (whether that writer
 * lives cannot be told from here). `verify` reports by it and `--clean`
 * removes the strays; a store removes them once a lost mount is back.
 */
import fs from 'node:fs/promises';
import { pidAlive, whereabouts } from './host.js';
import { tempOwner } from './paths.js';

export type TempVerdict = { kind: 'stray' } | { kind: 'live' } | { kind: 'foreign'; host: string };

/**
 * The verdict on one temp file name. `selfWrites`: this process is a
 * writer whose own appends may be in flight, so its own pid is live (verify,
 * which writes nothing, counts its own pid as dead: a reused pid).
 */
export function judgeTemp(name: string, selfWrites: boolean): TempVerdict {
  const owner = tempOwner(name);
  if (owner === null) return { kind: 'stray' };
  const where = owner.host === null ? 'this-boot' : whereabouts(owner.host, owner.boot!);
  if (where === 'other-host') return { kind: 'foreign', host: owner.host! };
  // Same host, same boot: the pid says. Same host, earlier boot: nothing of then still runs.
  if (where === 'this-boot' && (owner.pid === process.pid ? selfWrites : pidAlive(owner.pid))) return { kind: 'live' };
  return { kind: 'stray' };
}

/** The names in `tmpDir` that this host's dead writers left, as seen by a live writer. */
export async function strayTemps(tmpDir: string): Promise<string[]> {
  return (await fs.readdir(tmpDir)).filter((name) => judgeTemp(name, true).kind === 'stray');
}
