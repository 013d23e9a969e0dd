/**
 * The one name a filter set is known by (spec §8d: one mark per agent and
 * filter set). Canonical: the names of each filter sorted, so `--to a --to b`
 * and `--to b --to a` share one mark and `--to a` alone has another. Pure.
 */
import { FILTER_FIELDS, type RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';

/** A name that can appear as is in a file name; any other makes the key a hash. */
const PLAIN = /^[A-Za-z0-9._-]+$/;
const MAX_PLAIN_KEY = 160;

/** `to=all,bob;kind=question` (the filters in FILTER_FIELDS' order), or `any` for no filter. */
export function filterText(filter: RecordFilter | null | undefined, shape: IdShape): string {
  if (!filter) return 'any';
  const parts: string[] = [];
  for (const field of FILTER_FIELDS) {
    const value = filter[field.key];
    if (value === undefined) continue;
    parts.push(`${field.name}=${typeof value === 'number' ? shape.format(value) : [...value].sort().join(',')}`);
  }
  return parts.length === 0 ? 'any' : parts.join(';');
}

/** The mark's file name for a filter set: its text where that is a safe, short file name, else `h-` and a hash of it. */
export function filterKey(filter: RecordFilter | null | undefined, shape: IdShape): string {
  const text = filterText(filter, shape);
  const plain = text.split(/[=;,]/).every((part) => PLAIN.test(part));
  if (plain && text.length <= MAX_PLAIN_KEY) return text;
  return 'h-' + process.getBuiltinModule('node:crypto').createHash('sha256').update(text).digest('hex').slice(0, 40);
}
