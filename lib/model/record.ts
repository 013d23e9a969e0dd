/**
 * The record an agent sends: a first line that is exactly `@p-e/x0`, then
 * `key: value` header lines up to the first empty line, then a free body.
 *
 * Parsing is liberal (CRLF is fine, unknown keys are kept and ignored, the
 * first of a repeated single-valued key wins) but the bytes are stored exactly
 * as received: this module only reads them, it never rewrites them.
 */
import { RelayError } from '../errors.js';
import { parseRecipients } from './filter.js';
import { type IdShape, idsIn } from './ids.js';

export const FIRST_LINE = '@p-e/x0';
export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;
/** How many distinct ids one record may name in parent:/ref:. */
export const MAX_NAMED_IDS = 64;
/**
 * How many distinct recipients one record's `to:` may name. Each costs every
 * process a doorbell ring and the index a name, on every append: thousands
 * of names in one record held a hub's core and its memory.
 */
export const MAX_RECIPIENTS = 64;

export interface RecordClaims {
  kind: string | null;
  from: string | null;
  to: string | null;
  /** The id in `parent:`, when it is one of this store's shape. */
  parent: number | null;
  /** Every id named in `parent:` or `ref:`, distinct, in first-seen order. */
  named: number[];
}

// ignoreBOM keeps a leading U+FEFF in the text: by default the decoder drops
// it, and a record whose bytes begin with a BOM would pass the first-line check
// although the stored first line is not exactly @p-e/x0.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Decodes bytes as UTF-8, refusing invalid sequences and NUL bytes. */
export function decodeRecordText(bytes: Uint8Array): string {
  if (bytes.includes(0)) {
    throw new RelayError('bad_record', 'The record contains a NUL byte; records are text. Send valid UTF-8 text without NUL bytes.');
  }
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new RelayError('bad_record', 'The record is not valid UTF-8; records are text. Send the record encoded as UTF-8.');
  }
}

/**
 * A record's header lines (after its first line, up to the first empty one):
 * the first value of each key (lower case), and every ref: value. The one
 * reading of a header block: the claims here and a work claim's claim: and
 * for: (work-claims.ts) are read alike.
 */
export function recordHeaders(lines: readonly string[]): { single: Map<string, string>; refValues: string[] } {
  const single = new Map<string, string>();
  const refValues: string[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = stripCr(lines[i]!);
    if (line === '') break;
    const colon = line.indexOf(':');
    if (colon <= 0) continue; // not a header; kept in the bytes, ignored here
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'ref') refValues.push(value);
    else if (!single.has(key)) single.set(key, value);
  }
  return { single, refValues };
}

/** Reads a record's claims, or refuses it with a sentence saying what to send instead. */
export function parseRecord(bytes: Uint8Array, shape: IdShape, maxBytes = DEFAULT_MAX_RECORD_BYTES): RecordClaims {
  if (bytes.length > maxBytes) {
    throw new RelayError('too_large', `The record is ${bytes.length} bytes; this store takes at most ${maxBytes}. Send a shorter record, or split it ` +
      `and link the parts with ref:.`, { limit: maxBytes, size: bytes.length });
  }
  const text = decodeRecordText(bytes);
  const lines = text.split('\n');
  const first = stripCr(lines[0]!);
  if (first !== FIRST_LINE) {
    throw new RelayError('bad_record', `A record must begin with the line "${FIRST_LINE}" and this one begins with ` +
      `${JSON.stringify(first.slice(0, 40))}. Put "${FIRST_LINE}" on the first line, then headers such as "kind: note", an empty line and the body.`);
  }

  const { single, refValues } = recordHeaders(lines);

  const parentValue = single.get('parent');
  const parent = parentValue === undefined ? null : (idsIn(parentValue, shape)[0] ?? null);
  const named = new Set<number>();
  if (parent !== null) named.add(parent);
  for (const value of refValues) for (const n of idsIn(value, shape)) named.add(n);
  if (named.size > MAX_NAMED_IDS) {
    throw new RelayError('too_many_refs', `The record names ${named.size} ids in parent:/ref:; at most ${MAX_NAMED_IDS} are allowed. Name fewer ids, ` +
      `or point to a record that lists the rest.`, { limit: MAX_NAMED_IDS });
  }
  const to = nonEmpty(single.get('to'));
  const recipients = parseRecipients(to).length;
  if (recipients > MAX_RECIPIENTS) {
    throw new RelayError(
      'too_many_recipients',
      `The record's to: names ${recipients} recipients; at most ${MAX_RECIPIENTS} are allowed. ` +
        `Name fewer, or address a name they all wait for (to: all) and list who it is for in the body.`,
      { limit: MAX_RECIPIENTS },
    );
  }
  return {
    kind: nonEmpty(single.get('kind')),
    from: nonEmpty(single.get('from')),
    to,
    parent,
    named: [...named],
  };
}

function stripCr(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value === '' ? null : value;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Encodes a record that arrived as a JSON string. A lone surrogate has no
 * UTF-8 form; Buffer.from would silently swap it for U+FFFD and store bytes
 * the sender never sent, so it is refused instead.
 */
export function encodeRecordText(text: string): Buffer {
  if (LONE_SURROGATE.test(text)) {
    throw new RelayError('bad_record', 'The record text contains a lone UTF-16 surrogate, which has no UTF-8 form. Send well-formed Unicode text.');
  }
  return Buffer.from(text, 'utf8');
}

/** A record's body: everything after the first empty line below its first line ('' when it has none). */
export function recordBody(text: string): string {
  const blank = /\r?\n\r?\n/.exec(text);
  return blank === null ? '' : text.slice(blank.index + blank[0].length);
}
