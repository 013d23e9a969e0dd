/** The §8a filters as CLI options of `wait`, `ls` and `tail`; --to, --from and --kind repeat, --text is one search. */
import { parseFilter, type RecordFilter } from '../model/filter.js';
import type { IdShape } from '../model/ids.js';
import type { CommandContext, OptionSpec } from './command.js';

export const FILTER_OPTIONS: OptionSpec = {
  to: { type: 'string', multiple: true },
  from: { type: 'string', multiple: true },
  kind: { type: 'string', multiple: true },
  'replies-to': { type: 'string' },
  text: { type: 'string' },
};

export const FILTER_HELP = `  --to NAME         only records whose to: names NAME (repeat for several: any matches)
  --from NAME       only records whose from: is NAME (repeatable)
  --kind KIND       only records whose kind: is KIND (repeatable)
  --replies-to ID   only records naming ID in parent: or ref:
  --text WORDS      only records whose header values and body hold every word,
                    as a whole word in any case (at most 200 characters)
Filters combine with AND; names match literally; a record without the header never matches.`;

export function filterOption(ctx: CommandContext, shape: IdShape): RecordFilter | null {
  const list = (name: string) => ctx.values[name] as string[] | undefined;
  const repliesTo = ctx.values['replies-to'];
  const text = ctx.values.text;
  return parseFilter({ to: list('to'), from: list('from'), kind: list('kind'), replies_to: typeof repliesTo === 'string' ? repliesTo : undefined,
    text: typeof text === 'string' ? text : undefined }, shape);
}
