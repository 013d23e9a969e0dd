/**
 * A corpus directory's listing, read for records: the one place a readdir
 * becomes record ids (the start-up scan, a wait without `after`, `verify`,
 * `init`, `mirror`). Anything else in the directory (rsync's
 * `.relay-0005.XXXXXX`, `.state/`, a README) is not a record.
 */
import fs from 'node:fs/promises';
import type { IdShape } from '../model/ids.js';

const OF_ANY_WIDTH = /^relay-\d+$/;

/** `relay-` and any number of digits: a record of some store, whatever its width. */
export function isRecordNameOfAnyWidth(name: string): boolean {
  return OF_ANY_WIDTH.test(name);
}

/** The ids of this store's shape among `names`, in listing order. */
export function recordIdsIn(names: readonly string[], shape: IdShape): number[] {
  const ids: number[] = [];
  for (const name of names) {
    const n = shape.parseRecordId(name);
    if (n !== null) ids.push(n);
  }
  return ids;
}

/** The ids of every file in `dir` named like a record of this store now (a readdir; nothing is read). */
export async function listRecordIds(dir: string, shape: IdShape): Promise<number[]> {
  return recordIdsIn(await fs.readdir(dir), shape);
}

/**
 * The names in `dir` that are records of any width: before a store's width
 * is known (`init` on a directory without settings), or to find records
 * that a store of this width would not see (`mirror`).
 */
export async function listRecordNames(dir: string): Promise<string[]> {
  return (await fs.readdir(dir)).filter(isRecordNameOfAnyWidth);
}
