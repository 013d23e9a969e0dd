/**
 * Relay ids: `relay-` and a fixed number of decimal digits (four unless the
 * store was created wider). Fixed width is what makes string order equal
 * issue order, so ids are compared literally and never normalised: `relay-33`
 * is not `relay-0033`, it is simply not an id of this store.
 *
 * Internally an id is its number (1 … max); `relay-0000` parses to 0 and is
 * only meaningful as an `after` mark meaning "from the start".
 */

export const DEFAULT_ID_WIDTH = 4;
export const MIN_ID_WIDTH = 4;
export const MAX_ID_WIDTH = 9;
const PREFIX = 'relay-';

export interface IdShape {
  readonly width: number;
  /** The highest id the store can ever hold (relay-9999 at width 4). */
  readonly max: number;
  /** `relay-` and N digits, for messages and schema descriptions. */
  readonly describe: string;
  /** An example id of this width, for messages. */
  readonly example: string;
  format(n: number): string;
  /** The number of a well-formed id or mark (0 … max), or null for anything else. */
  parse(text: unknown): number | null;
  /** The number of a well-formed record id (1 … max), or null. */
  parseRecordId(text: unknown): number | null;
}

export function idShape(width: number = DEFAULT_ID_WIDTH): IdShape {
  if (!Number.isInteger(width) || width < MIN_ID_WIDTH || width > MAX_ID_WIDTH) {
    throw new RangeError(`id width must be a whole number from ${MIN_ID_WIDTH} to ${MAX_ID_WIDTH}`);
  }
  const pattern = new RegExp(`^${PREFIX}[0-9]{${width}}$`);
  const max = 10 ** width - 1;
  const format = (n: number) => PREFIX + String(n).padStart(width, '0');
  const parse = (text: unknown): number | null => {
    if (typeof text !== 'string' || text.length !== PREFIX.length + width || !pattern.test(text)) return null;
    return Number(text.slice(PREFIX.length));
  };
  return {
    width,
    max,
    describe: `\`${PREFIX}\` and ${width} digits`,
    example: format(33),
    format,
    parse,
    parseRecordId(text) {
      const n = parse(text);
      return n === null || n === 0 ? null : n;
    },
  };
}

/**
 * The id an append without a proposal takes: one past the highest id ever
 * issued here (the high-water mark). Ids that held records cite are not
 * stepped over (spec §8c): every cited id above the mark is beyond it, so
 * stepping over them would let one record of 64 citations burn 65 ids, and a
 * citation of the last id end assignment for everyone. Returns null when the
 * id space is exhausted.
 */
export function nextFreeId(highest: number, max: number): number | null {
  const n = highest + 1;
  return n <= max ? n : null;
}

/** Splits a header value into the ids of this shape it names (spaces or commas between). */
export function idsIn(value: string, shape: IdShape): number[] {
  const found: number[] = [];
  for (const token of value.split(/[\s,]+/)) {
    const n = shape.parseRecordId(token);
    if (n !== null) found.push(n);
  }
  return found;
}

/** Where `n` stands in ids sorted ascending, or -1 when it is not there. */
export function sortedIndexOf(ids: ArrayLike<number>, n: number): number {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const m = ids[mid]!;
    if (m === n) return mid;
    if (m < n) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Two ascending id lists compared: what only `disk` has (missing from the index), what only `held` has (extra). */
export function sortedDifference(disk: ArrayLike<number>, held: ArrayLike<number>): { missing: number[]; extra: number[] } {
  const missing: number[] = [];
  const extra: number[] = [];
  let i = 0;
  let j = 0;
  while (i < disk.length || j < held.length) {
    if (j >= held.length || (i < disk.length && disk[i]! < held[j]!)) missing.push(disk[i++]!);
    else if (i >= disk.length || held[j]! < disk[i]!) extra.push(held[j++]!);
    else {
      i++;
      j++;
    }
  }
  return { missing, extra };
}
