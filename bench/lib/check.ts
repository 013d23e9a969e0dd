/**
 * After a concurrent run: did every acknowledged append land exactly once,
 * whole? Ids must run 1…N with no gap, N must equal the appends the writers
 * were told succeeded, every digest must match, and no record's bytes may
 * appear twice (a duplicate would be one append stored under two ids).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { splitRecordFile } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';

export interface CorpusCheck {
  held: number;
  highest: number;
  gaps: number;
  damaged: number;
  duplicates: number;
  strayTemps: number;
}

export async function checkCorpus(corpus: string, width: number): Promise<CorpusCheck> {
  const shape = idShape(width);
  const ids = (await fs.readdir(corpus)).map((n) => shape.parseRecordId(n)).filter((n): n is number => n !== null);
  const highest = ids.reduce((a, b) => Math.max(a, b), 0);
  const digests = new Set<string>();
  let damaged = 0;
  let duplicates = 0;
  for (const n of ids) {
    try {
      const { deposit } = splitRecordFile(await fs.readFile(path.join(corpus, shape.format(n))));
      if (digests.has(deposit.digest)) duplicates++;
      digests.add(deposit.digest);
    } catch {
      damaged++;
    }
  }
  const strayTemps = (await fs.readdir(path.join(corpus, '.state', 'tmp')).catch(() => [])).length;
  return { held: ids.length, highest, gaps: highest - ids.length, damaged, duplicates, strayTemps };
}

/** Records lost (or extra) against what the writers were told, plus anything wrong on disk. */
export function lostOf(check: CorpusCheck, acknowledged: number, before = 0): number {
  return acknowledged - (check.held - before);
}

export function describeCheck(check: CorpusCheck, acknowledged: number, before = 0): string {
  return `${acknowledged} acknowledged, ${check.held - before} on disk, ${check.gaps} gaps, ${check.damaged} damaged, ${check.duplicates} duplicated, ${check.strayTemps} stray temp files`;
}
