/**
 * The §8a filters as query parameters of GET /relays and GET /events, one
 * per filter of the model's table (FILTER_FIELDS): a names filter may repeat
 * (`?to=scout-7&to=all`), an id or a search is given once (`?replies_to=ID`,
 * `?text=disk%20full`). The same parser as the tools' arguments, so a door
 * cannot match differently from another.
 */
import { RelayError } from '../errors.js';
import { FILTER_FIELDS, parseFilter, type FilterFieldRow, type FilterInput, type RecordFilter } from '../model/filter.js';
import type { IdShape } from '../model/ids.js';

export function filterFromQuery(params: URLSearchParams, shape: IdShape): RecordFilter | null {
  const input: Record<string, string | string[]> = {};
  for (const field of FILTER_FIELDS) {
    if (!params.has(field.name)) continue;
    const values = params.getAll(field.name);
    if (field.value !== 'names' && values.length > 1) throw givenTwice(field, values.length);
    input[field.name] = field.value === 'names' ? values : values[0]!;
  }
  return parseFilter(input as FilterInput, shape);
}

/** A filter that takes one value, sent more than once: which value was meant is not for the hub to guess. */
function givenTwice(field: FilterFieldRow, count: number): RelayError {
  const { name } = field;
  const advice = field.value === 'id' ? 'Send it once; for several ids, open one request per id.'
    : `Send it once, with every word in it (${name}=disk%20full).`;
  return new RelayError('bad_filter', `${name} ${field.value === 'id' ? 'names one id' : 'is one search'}, and this request sends ${count}. ${advice}`,
    { param: name });
}
