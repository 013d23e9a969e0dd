/**
 * Addressed delivery (spec §8a): which records a caller wants, decided by the
 * hub from the index instead of by a model reading every record.
 *
 *   to, from, kind   a name or a list of names; a record matches when its own
 *                    claim equals one of them (for `to`, when any recipient
 *                    it names equals one of them)
 *   replies_to       an id; matches records naming it in parent: or ref:
 *   text             words; matches records whose header values and body
 *                    hold every one of them as a whole word, in any case
 *                    (`textWords` below is the rule, said once)
 *
 * Different filters combine with AND, the names within one filter with OR.
 * Names match literally (`Scout-7` is not `scout-7`), there is no wildcard,
 * and a record without the header never matches a filter on it. Pure: the
 * store builds a filter from a door's input and asks the index; `text` needs
 * a record's words, which the index does not hold, so `matches` here decides
 * the other filters and the store's text index (store/index/text-index.ts)
 * decides the words.
 */
import { RelayError } from '../errors.js';
import type { IdShape } from './ids.js';

/**
 * How a filter's value is given and what parseFilter makes of it:
 *
 *   names   a name or a list of names (a door may repeat it) -> a set of names
 *   id      one record id                                     -> its number
 *   words   one search of words                               -> its folded words
 */
export type FilterValue = 'names' | 'id' | 'words';

/** One filter, as every door takes it. */
export interface FilterField {
  /** Its name as an MCP argument, a query parameter, and in a mark's filter key. */
  readonly name: string;
  /** Its property in a RecordFilter. */
  readonly key: string;
  readonly value: FilterValue;
  /** Names only: split on commas and white space like the to: header it is matched against, so "scout-7, all" is two names. */
  readonly split?: boolean;
  /** What it selects, one line: the MCP argument's description. */
  readonly describe: string;
  /** The CLI option (`--replies-to`), its placeholder, and its help (more lines after a newline). */
  readonly flag: string;
  readonly arg: string;
  readonly help: string;
}

/**
 * The longest `text` a filter takes, in characters. A search is a few words;
 * the cap keeps a 10 KB query string from costing a lookup per word in every
 * process it reaches, and says so instead.
 */
export const MAX_TEXT_CHARS = 200;

/**
 * The filters, each defined here once. Every door derives what it takes
 * from this table: the MCP tools' arguments (lib/mcp/tools/shared.ts), the
 * query parameters of GET /relays and /events (lib/http/filter-query.ts),
 * the CLI options (lib/cli/filter-options.ts); parseFilter reads it, and a
 * mark's filter key (lib/store/agents/filter-key.ts) names the filters in
 * its order. Marks on disk are named by that key, so rows are added, never
 * reordered. What a filter matches is `matches` below, or for words the
 * store's text index.
 */
export const FILTER_FIELDS = [
  {
    name: 'to', key: 'to', value: 'names', split: true, describe: 'optional: its to: names any of these',
    flag: 'to', arg: 'NAME', help: 'only records whose to: names NAME (repeat for several: any matches)',
  },
  {
    name: 'from', key: 'from', value: 'names', describe: 'optional: its from: is one of these',
    flag: 'from', arg: 'NAME', help: 'only records whose from: is NAME (repeatable)',
  },
  {
    name: 'kind', key: 'kind', value: 'names', describe: 'optional: its kind: is one of these (exact case)',
    flag: 'kind', arg: 'KIND', help: 'only records whose kind: is KIND (repeatable)',
  },
  {
    name: 'replies_to', key: 'repliesTo', value: 'id', describe: 'optional: it names this id in parent: or ref:',
    flag: 'replies-to', arg: 'ID', help: 'only records naming ID in parent: or ref:',
  },
  {
    name: 'text', key: 'text', value: 'words', describe: 'optional: it holds all these words (whole, any case)',
    flag: 'text', arg: 'WORDS', help: `only records whose header values and body hold every word,\nas a whole word in any case (at most ${MAX_TEXT_CHARS} characters)`,
  },
] as const satisfies readonly FilterField[];

/** One row of the table, with its literal types (so the doors' types follow the table too). */
export type FilterFieldRow = (typeof FILTER_FIELDS)[number];

/** What parseFilter makes of each kind of value. */
interface Parsed {
  /** The names, distinct. */
  names: ReadonlySet<string>;
  /** The number of the id. */
  id: number;
  /** Words every matching record holds (folded, distinct, in the order given); never empty. */
  words: readonly string[];
}

/** A parsed filter: `{ to?: Set, from?: Set, kind?: Set, repliesTo?: number, text?: string[] }`, from the table. */
export type RecordFilter = { [F in FilterFieldRow as F['key']]?: Parsed[F['value']] };

/** A filter as a door receives it: names as one string or a list, an id or a search as text. */
export type FilterInput = { [F in FilterFieldRow as F['name']]?: F['value'] extends 'names' ? string | readonly string[] : string };

/** The filters' names, for a sentence: "to, from, kind, replies_to or text". */
export const FILTER_NAMES = FILTER_FIELDS.map((field) => field.name).join(', ').replace(/, ([^,]*)$/, ' or $1');

/** What a filter looks at in one held record. */
export interface Filterable {
  kind: string | null;
  from: string | null;
  /** The recipients its `to:` names, split once when it is indexed. */
  recipients: readonly string[];
  /** Every id it names in parent: or ref: (an array, or a view of the index's column). */
  named: { includes(n: number): boolean };
}

const SEPARATORS = /[\s,]+/;

/**
 * The most names one filter (`to`, `from` or `kind`) may list. An agent
 * waits for its own name and `all`; each `to` name costs the process that
 * serves the wait a file and an inotify watch (lib/store/hear/bells.ts), and the
 * watches are shared by every process of the user, so a list of thousands
 * is refused instead of being paid for. The same bound as a record's refs.
 */
export const MAX_FILTER_NAMES = 64;
/**
 * The longest name a filter may give: an agent's name is at most 64
 * characters, and a named agent's filter set is written into its mark
 * (lib/store/agents/mark-file.ts), which must stay small enough to read back.
 */
export const MAX_FILTER_NAME_LENGTH = 256;

/** The recipients a `to:` header names: separated by commas or white space. */
export function parseRecipients(to: string | null): string[] {
  if (to === null) return [];
  const names = to.split(SEPARATORS).filter((name) => name !== '');
  return [...new Set(names)];
}

export function isEmptyFilter(filter: RecordFilter | null | undefined): boolean {
  return !filter || FILTER_FIELDS.every((field) => filter[field.key] === undefined);
}

/**
 * A word: a run of letters, digits, combining marks and underscores. Anything
 * else (spaces, punctuation, `.*+?[](){}|\^$`) only separates words, in a
 * record and in a search alike, so a search is never a pattern.
 */
const WORD = /[\p{L}\p{N}\p{M}_]+/gu;

/**
 * Folds a word so that case never matters: NFKC (a ligature or a full-width
 * letter is its plain form), then upper and back to lower case, which folds
 * what lower case alone does not (ß and SS, final ς and σ, the Kelvin sign).
 */
export function foldWord(word: string): string {
  return word.normalize('NFKC').toUpperCase().toLowerCase();
}

/**
 * The matching rule of the `text` filter: the distinct folded words of a
 * text, in first-seen order. A record matches when every word of the search
 * is among the words of its header values and body. Whole words, not
 * substrings: `deploy` does not find `deployment`, which is the price of an
 * index that answers a rare word at once however large the store (a
 * substring would mean reading every record's text on every query). Runs
 * without spaces (Chinese, Japanese) are one word each, so such a search
 * finds what it spells out whole.
 */
export function textWords(text: string): string[] {
  const out = new Set<string>();
  if (ASCII.test(text)) {
    // ASCII text (most records), the same rule faster: no normalizing, and lower case alone folds it.
    for (const word of text.toLowerCase().split(ASCII_SEPARATORS)) if (word !== '') out.add(word);
    return [...out];
  }
  const spellings = new Set<string>();
  for (const [word] of text.normalize('NFKC').matchAll(WORD)) spellings.add(word);
  for (const word of spellings) out.add(foldWord(word));
  return [...out];
}

const ASCII = /^[\x00-\x7f]*$/;
const ASCII_SEPARATORS = /[^a-z0-9_]+/;

/**
 * The text a record is searched by: its header values and its body, not the
 * first line nor the header keys (else `from` or `kind` would find every
 * record).
 */
export function searchableText(recordText: string): string {
  const lines = recordText.split('\n');
  const parts: string[] = [];
  let i = 1;
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '' || line === '\r') break;
    const colon = line.indexOf(':');
    parts.push(colon <= 0 ? line : line.slice(colon + 1));
  }
  parts.push(lines.slice(i + 1).join('\n'));
  return parts.join('\n');
}

/** Decides every filter but `text`, which the store's text index decides (see the top of this file). */
export function matches(filter: RecordFilter | null | undefined, record: Filterable): boolean {
  if (!filter) return true;
  if (filter.kind && (record.kind === null || !filter.kind.has(record.kind))) return false;
  if (filter.from && (record.from === null || !filter.from.has(record.from))) return false;
  if (filter.to && !record.recipients.some((name) => filter.to!.has(name))) return false;
  if (filter.repliesTo !== undefined && !record.named.includes(filter.repliesTo)) return false;
  return true;
}

/**
 * Builds a filter from a door's input, or refuses it with a sentence saying
 * what to send. Returns null when nothing filters (every record matches).
 * A `to` value is split like the header it is matched against, so
 * `"scout-7, all"` and `["scout-7", "all"]` mean the same.
 */
export function parseFilter(input: FilterInput, shape: IdShape): RecordFilter | null {
  const filter: Record<string, unknown> = {};
  for (const field of FILTER_FIELDS) {
    const value: unknown = input[field.name];
    if (value === undefined) continue;
    filter[field.key] = field.value === 'names' ? names(field.name, value as string | readonly string[], (field as FilterField).split === true)
      : field.value === 'id' ? recordId(field.name, value as string, shape)
      : searchWords(field.name, value as string);
  }
  return isEmptyFilter(filter) ? null : (filter as RecordFilter);
}

/** The number of the id a filter names, or bad_id saying what an id of this store looks like. */
function recordId(param: string, id: string, shape: IdShape): number {
  const n = typeof id === 'string' ? shape.parseRecordId(id) : null;
  if (n === null) {
    throw new RelayError('bad_id', `${param} "${id}" is not a record id of this store, so no record can name it. Send ` +
      `${shape.describe} (e.g. ${shape.example}), matched literally, or leave ${param} out.`, { param });
  }
  return n;
}

/** A search's words, or a refusal saying what to send. */
function searchWords(param: string, text: string): string[] {
  const refuse = (what: string, details: Record<string, unknown> = {}) =>
    new RelayError('bad_filter', `${param} ${what}. Send a few words (at most ${MAX_TEXT_CHARS} characters, e.g. "disk full"), ` +
      `matched as whole words in any case, or leave ${param} out.`, { param, ...details });
  if (typeof text !== 'string') throw refuse('is not a string');
  const chars = [...text].length;
  if (chars > MAX_TEXT_CHARS) throw refuse(`is ${chars} characters, longer than a search can be`, { max: MAX_TEXT_CHARS });
  if (text.includes('\0')) throw refuse('holds a NUL character, which no record can hold');
  // U+FFFD is what invalid UTF-8 in a query string or an argument decodes to: the search would not be the bytes sent.
  if (/\uFFFD|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text)) {
    throw refuse('is not valid UTF-8 (it holds a replacement character or a lone surrogate)');
  }
  const words = textWords(text);
  if (words.length === 0) throw refuse('holds no word (letters or digits), so nothing could match it');
  return words;
}

function names(param: string, value: string | readonly string[] | undefined, split: boolean): Set<string> | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? [value] : value;
  const out = new Set<string>();
  for (const item of list) {
    const parts = split ? item.split(SEPARATORS).filter((s) => s !== '') : [item.trim()];
    for (const part of parts) if (part !== '') out.add(part);
  }
  if (out.size === 0) {
    throw new RelayError('bad_filter', `${param} names nobody, so nothing could match it. Send a name (e.g. scout-7) or a list of names, or leave ${param} out.`, { param });
  }
  const long = [...out].find((name) => name.length > MAX_FILTER_NAME_LENGTH);
  if (long !== undefined) {
    throw new RelayError(
      'bad_filter',
      `${param} names a name of ${long.length} characters; a name in a filter is at most ${MAX_FILTER_NAME_LENGTH}. Send the names as the records' headers spell them (e.g. scout-7), or leave ${param} out.`,
      { param, maxLength: MAX_FILTER_NAME_LENGTH },
    );
  }
  if (out.size > MAX_FILTER_NAMES) {
    throw new RelayError(
      'bad_filter',
      `${param} names ${out.size} names; a filter may name at most ${MAX_FILTER_NAMES}. ` +
        `Send at most ${MAX_FILTER_NAMES} (an agent waits for its own name and all: ["scout-7", "all"]), ` +
        `or leave ${param} out and pick the records out of the answer yourself.`,
      { param, max: MAX_FILTER_NAMES },
    );
  }
  return out;
}
