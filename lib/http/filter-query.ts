/**
 * The §8a filters as query parameters of GET /relays and GET /events:
 * `to`, `from` and `kind` may repeat (`?to=scout-7&to=all`), `replies_to`
 * names one id, `text` one search (`?text=disk%20full`). The same parser as the tools' arguments, so a door cannot
 * match differently from another.
 */
import { RelayError } from '../errors.js';
import { parseFilter, type RecordFilter } from '../model/filter.js';
import type { IdShape } from '../model/ids.js';

export function filterFromQuery(params: URLSearchParams, shape: IdShape): RecordFilter | null {
  const list = (name: string) => (params.has(name) ? params.getAll(name) : undefined);
  const repliesTo = params.getAll('replies_to');
  if (repliesTo.length > 1) throw new RelayError('bad_filter',
    `replies_to names one id, and this request sends ${repliesTo.length}. ` +
    `Send it once; to follow several threads, open one request per id.`, { param: 'replies_to' });
  const text = params.getAll('text');
  if (text.length > 1) throw new RelayError('bad_filter',
    `text is one search, and this request sends ${text.length}. Send it once, with every word in it (text=disk%20full).`, { param: 'text' });
  return parseFilter({ to: list('to'), from: list('from'), kind: list('kind'), replies_to: repliesTo[0], text: text[0] }, shape);
}
