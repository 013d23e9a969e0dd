/**
 * The §8a filters as CLI options of `wait`, `ls` and `tail`, one per filter
 * of the model's table (FILTER_FIELDS): a names filter repeats (--to a
 * --to b), an id or a search is given once.
 */
import { FILTER_FIELDS, parseFilter, type FilterInput, type RecordFilter } from '../model/filter.js';
import type { IdShape } from '../model/ids.js';
import type { CommandContext, OptionSpec } from './command.js';

export const FILTER_OPTIONS: OptionSpec = Object.fromEntries(
  FILTER_FIELDS.map((field) => [field.flag, field.value === 'names' ? { type: 'string', multiple: true } : { type: 'string' }]),
);

/** The help's column for option descriptions, as the commands' own options use it. */
const COLUMN = 20;

export const FILTER_HELP = [
  ...FILTER_FIELDS.map((field) => `  --${field.flag} ${field.arg}`.padEnd(COLUMN - 1) + ' ' + field.help.replaceAll('\n', '\n' + ' '.repeat(COLUMN))),
  'Filters combine with AND; names match literally; a record without the header never matches.',
].join('\n');

export function filterOption(ctx: CommandContext, shape: IdShape): RecordFilter | null {
  const input: Record<string, unknown> = {};
  for (const field of FILTER_FIELDS) {
    const value = ctx.values[field.flag];
    if (value !== undefined) input[field.name] = value;
  }
  return parseFilter(input as FilterInput, shape);
}
