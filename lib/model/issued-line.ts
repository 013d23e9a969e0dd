/**
 * A line of the issued log (`.state/issued`): the id an append took and, after
 * it, what the writer already parsed of the record it linked there (its
 * claims, and who deposited it under which key).
 *
 *   relay-0042
 *   relay-0043 {"k":"question","f":"ana","t":"bo","p":41,"n":[41],"b":"mcp/ana","a":"ana"}
 *
 * Why the second part: every process of a swarm reads the log before its
 * calls to learn which ids other processes took, and without it must open
 * each new record to learn whom it is for. With it, a process holds a record
 * that is not for it from the line alone, unverified, and opens the file only
 * when a call needs the record (store/index/corpus-indexer.ts), so a swarm's
 * servers stop paying, each, for every record anyone writes.
 *
 * The record file stays the truth: a line is a claim about it, written by the
 * process that linked it, and never read for anything the file must prove
 * (a record is read and checked whole before it is served). A line that does
 * not parse as a hint is an id alone; one too long to stay a single small
 * write is written without its hint. The JSON is kept to ASCII so that a
 * line is one byte per character on every reader. Pure: no disk.
 */
import type { IdShape } from './ids.js';
import type { RecordClaims } from './record.js';

/** What an append's line tells other processes about its record. */
export interface IssuedHint {
  claims: RecordClaims;
  depositedBy: string;
  idempotencyKey?: string;
  agent?: string;
  /** The record's digest, written with a key: a REST key's scope is bound to it (idempotency-keys.ts). */
  digest?: string;
}

export interface IssuedLine {
  n: number;
  hint: IssuedHint | null;
}

/** A line longer than this is written without its hint (an O_APPEND write of it stays small; readers skip less). */
export const MAX_HINTED_LINE = 2048;

interface HintJson {
  k: string | null;
  f: string | null;
  t: string | null;
  p: number | null;
  n: number[];
  b: string;
  i?: string;
  a?: string;
  d?: string;
}

/** The log line for `n`, with the record's hint when it fits. Ends with a newline. */
export function formatIssuedLine(shape: IdShape, n: number, hint?: IssuedHint): string {
  const id = shape.format(n);
  if (hint === undefined) return `${id}\n`;
  const { claims } = hint;
  const json: HintJson = { k: claims.kind, f: claims.from, t: claims.to, p: claims.parent, n: claims.named, b: hint.depositedBy };
  if (hint.idempotencyKey !== undefined) json.i = hint.idempotencyKey;
  if (hint.agent !== undefined) json.a = hint.agent;
  if (hint.idempotencyKey !== undefined && hint.digest !== undefined) json.d = hint.digest;
  const line = `${id} ${asciiJson(json)}\n`;
  return line.length <= MAX_HINTED_LINE ? line : `${id}\n`;
}

/** The id and hint on one line (without its newline); null when the line names no id of this shape. */
export function parseIssuedLine(line: string, shape: IdShape): IssuedLine | null {
  const n = issuedLineId(line, shape);
  if (n === null) return null;
  const space = line.indexOf(' ');
  return { n, hint: space === -1 ? null : parseHint(line.slice(space + 1), shape) };
}

/** The id one line names, its hint left unread: what a reader wanting the high-water alone needs (a store's start, verify). */
export function issuedLineId(line: string, shape: IdShape): number | null {
  const space = line.indexOf(' ');
  return shape.parseRecordId(space === -1 ? line : line.slice(0, space));
}

function parseHint(text: string, shape: IdShape): IssuedHint | null {
  let json: Partial<HintJson>;
  try {
    json = JSON.parse(text) as Partial<HintJson>;
  } catch {
    return null;
  }
  if (typeof json !== 'object' || json === null) return null;
  const { k, f, t, p, n, b, i, a, d } = json;
  if (!nullableString(k) || !nullableString(f) || !nullableString(t) || typeof b !== 'string') return null;
  if (!(p === null || isId(p, shape)) || !Array.isArray(n) || !n.every((m) => isId(m, shape))) return null;
  if (p !== null && !n.includes(p)) return null; // the parent is always among the named ids
  if ((i !== undefined && typeof i !== 'string') || (a !== undefined && typeof a !== 'string') || (d !== undefined && typeof d !== 'string')) return null;
  const hint: IssuedHint = { claims: { kind: k, from: f, to: t, parent: p, named: n }, depositedBy: b };
  if (i !== undefined) hint.idempotencyKey = i;
  if (a !== undefined) hint.agent = a;
  if (d !== undefined) hint.digest = d;
  return hint;
}

const nullableString = (x: unknown): x is string | null => x === null || typeof x === 'string';

const isId = (x: unknown, shape: IdShape): x is number => typeof x === 'number' && shape.parseRecordId(shape.format(x)) === x;

/** JSON with every character past ASCII escaped, so the line reads the same as latin1 and as UTF-8. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
