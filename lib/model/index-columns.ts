/**
 * The storage under the record index (record-index.ts): no object per
 * record. Each record has a slot, and a slot is a row of typed-array
 * columns (names as numbers into one StringTable, the digest as 32 bytes,
 * deposited-at as epoch milliseconds); held ids are kept sorted beside the
 * slot of each. Named ids are entries of three parallel arrays that the
 * index threads its naming chains through. What a row means (whole,
 * damaged, unverified), the chains and the queries are the index's; this
 * file keeps the rows, grows them, and turns them into a snapshot's image
 * and back.
 */
import { MAX_NAMED_IDS } from './record.js';
import { StringTable } from './string-table.js';

/** A slot's flags. */
export const WHOLE = 1;
export const AUTHORED = 2;
/** The first named id is the parent. */
export const HAS_PARENT = 4;
/**
 * Held, its claims as a first look found them, its deposit not kept yet:
 * RecordIndex.addUnverified. Such a row decides what its claims cannot
 * match; whatever they might match is checked first.
 */
export const UNVERIFIED = 8;
export const DIGEST_BYTES = 32;
const CANONICAL_DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * The whole index as flat columns in id order: what a snapshot stores, and
 * what an index is rebuilt from. Position i describes ids[i].
 */
export interface IndexImage {
  highWater: number;
  ids: Int32Array;
  flags: Uint8Array;
  kind: Uint32Array;
  from: Uint32Array;
  to: Uint32Array;
  depositedBy: Uint32Array;
  /** deposited-at as epoch milliseconds; NaN when its text is not one toISOString() gives back (see odd). */
  depositedAt: Float64Array;
  /** 32 bytes per record; zeros when the digest text is not canonical (see odd). */
  digest: Uint8Array;
  namedCount: Uint8Array;
  /** Every record's named ids, concatenated in id order. */
  named: Int32Array;
  /** The string table after null (string n is strings[n - 1]). */
  strings: string[];
  /** Records whose deposited-at or digest text is kept as text: [position, depositedAt or null, digest or null]. */
  odd: [number, string | null, string | null][];
}

export class IndexColumns {
  /** Held ids ascending, and the slot of each; `count` of them are in use. */
  ids = new Int32Array(256);
  slotAt = new Int32Array(256);
  count = 0;
  /** Slots handed out so far (a removed or replaced record's slot is not reused). */
  slots = 0;
  flags = new Uint8Array(256);
  kind = new Uint32Array(256);
  from = new Uint32Array(256);
  to = new Uint32Array(256);
  depositedBy = new Uint32Array(256);
  depositedAt = new Float64Array(256);
  digest = new Uint8Array(256 * DIGEST_BYTES);
  /** A slot's named ids are named[namedStart[slot] …+namedCount[slot]]. */
  namedStart = new Uint32Array(256);
  namedCount = new Uint8Array(256);
  /** Named ids, and for each the id of the record naming it and the next entry naming the same id (-1 ends a chain). */
  named = new Int32Array(1024);
  namer = new Int32Array(1024);
  nextNaming = new Int32Array(1024);
  namedUsed = 0;
  /** Texts that do not fit their column, by slot. */
  readonly oddText = new Map<number, { depositedAt: string | null; digest: string | null }>();

  constructor(public strings: StringTable = new StringTable()) {}

  /** First position whose id is >= n. */
  position(n: number): number {
    const ids = this.ids;
    let lo = 0;
    let hi = this.count;
    if (hi > 0 && ids[hi - 1]! < n) return hi; // appends land at the end
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid]! < n) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Whether `n` is held at position `at`. */
  heldAt(at: number, n: number): boolean {
    return at < this.count && this.ids[at] === n;
  }

  insertAt(at: number, n: number, slot: number): void {
    if (this.count === this.ids.length) {
      this.ids = grown(this.ids, this.count + 1);
      this.slotAt = grown(this.slotAt, this.count + 1);
    }
    if (at < this.count) {
      this.ids.copyWithin(at + 1, at, this.count);
      this.slotAt.copyWithin(at + 1, at, this.count);
    }
    this.ids[at] = n;
    this.slotAt[at] = slot;
    this.count++;
  }

  removeAt(at: number): void {
    this.ids.copyWithin(at, at + 1, this.count);
    this.slotAt.copyWithin(at, at + 1, this.count);
    this.count--;
  }

  newSlot(namedCount: number): number {
    this.reserve(this.slots + 1, this.namedUsed + namedCount);
    const slot = this.slots++;
    this.namedStart[slot] = this.namedUsed;
    this.namedCount[slot] = namedCount;
    this.namedUsed += namedCount;
    return slot;
  }

  reserve(slots: number, named: number): void {
    if (slots > this.flags.length) {
      this.flags = grown(this.flags, slots);
      this.kind = grown(this.kind, slots);
      this.from = grown(this.from, slots);
      this.to = grown(this.to, slots);
      this.depositedBy = grown(this.depositedBy, slots);
      this.depositedAt = grown(this.depositedAt, slots);
      this.namedStart = grown(this.namedStart, slots);
      this.namedCount = grown(this.namedCount, slots);
      this.digest = grown(this.digest, this.flags.length * DIGEST_BYTES);
    }
    if (slots > this.ids.length) {
      this.ids = grown(this.ids, slots);
      this.slotAt = grown(this.slotAt, slots);
    }
    if (named > this.named.length) {
      this.named = grown(this.named, named);
      this.namer = grown(this.namer, named);
      this.nextNaming = grown(this.nextNaming, named);
    }
  }

  /** A slot's named ids (a view: copy it before the columns change). */
  namedOf(slot: number): Int32Array {
    const start = this.namedStart[slot]!;
    return this.named.subarray(start, start + this.namedCount[slot]!);
  }

  setTexts(slot: number, depositedAt: string, digest: string): void {
    const ms = Date.parse(depositedAt);
    const atFits = !Number.isNaN(ms) && new Date(ms).toISOString() === depositedAt;
    this.depositedAt[slot] = atFits ? ms : NaN;
    const digestFits = CANONICAL_DIGEST.test(digest);
    if (digestFits) this.digest.set(Buffer.from(digest.slice(7), 'hex'), slot * DIGEST_BYTES);
    else this.digest.fill(0, slot * DIGEST_BYTES, (slot + 1) * DIGEST_BYTES);
    if (!atFits || !digestFits) this.oddText.set(slot, { depositedAt: atFits ? null : depositedAt, digest: digestFits ? null : digest });
    else this.oddText.delete(slot);
  }

  /** A whole slot's deposited-at and digest, as the deposit header wrote them. */
  textsOf(slot: number): { depositedAt: string; digest: string } {
    const odd = this.oddText.get(slot);
    return {
      depositedAt: odd?.depositedAt ?? new Date(this.depositedAt[slot]!).toISOString(),
      digest: odd?.digest ?? 'sha256:' + Buffer.from(this.digest.buffer, this.digest.byteOffset + slot * DIGEST_BYTES, DIGEST_BYTES).toString('hex'),
    };
  }

  /** The whole records as flat columns in id order, for a snapshot (damaged and unverified records are left out: they are read again). */
  toImage(highWater: number): IndexImage {
    const positions: number[] = [];
    let namedTotal = 0;
    for (let i = 0; i < this.count; i++) {
      const slot = this.slotAt[i]!;
      if (!(this.flags[slot]! & WHOLE)) continue;
      positions.push(i);
      namedTotal += this.namedCount[slot]!;
    }
    const count = positions.length;
    const image = emptyImage(highWater, count, namedTotal, this.strings.toArray());
    let k = 0;
    for (let i = 0; i < count; i++) {
      const slot = this.slotAt[positions[i]!]!;
      image.ids[i] = this.ids[positions[i]!]!;
      image.flags[i] = this.flags[slot]!;
      image.kind[i] = this.kind[slot]!;
      image.from[i] = this.from[slot]!;
      image.to[i] = this.to[slot]!;
      image.depositedBy[i] = this.depositedBy[slot]!;
      image.depositedAt[i] = this.depositedAt[slot]!;
      image.digest.set(this.digest.subarray(slot * DIGEST_BYTES, (slot + 1) * DIGEST_BYTES), i * DIGEST_BYTES);
      image.namedCount[i] = this.namedCount[slot]!;
      image.named.set(this.namedOf(slot), k);
      k += this.namedCount[slot]!;
      const odd = this.oddText.get(slot);
      if (odd) image.odd.push([i, odd.depositedAt, odd.digest]);
    }
    return image;
  }

  /**
   * Columns filled from an image, slot i for position i, named entries in
   * order (their chains are the index's to thread). Throws when the image
   * does not hold together (a snapshot is then not used).
   */
  static fromImage(image: IndexImage): IndexColumns {
    checkImage(image);
    const count = image.ids.length;
    const c = new IndexColumns(StringTable.fromArray(image.strings));
    c.reserve(count, image.named.length);
    c.ids.set(image.ids);
    for (let i = 0; i < count; i++) c.slotAt[i] = i;
    c.count = c.slots = count;
    c.flags.set(image.flags);
    c.kind.set(image.kind);
    c.from.set(image.from);
    c.to.set(image.to);
    c.depositedBy.set(image.depositedBy);
    c.depositedAt.set(image.depositedAt);
    c.digest.set(image.digest);
    c.namedCount.set(image.namedCount);
    for (const [i, depositedAt, digest] of image.odd) c.oddText.set(i, { depositedAt, digest });
    c.named.set(image.named);
    let k = 0;
    for (let i = 0; i < count; i++) {
      c.namedStart[i] = k;
      k += image.namedCount[i]!;
    }
    c.namedUsed = k;
    return c;
  }
}

function emptyImage(highWater: number, count: number, named: number, strings: string[]): IndexImage {
  return {
    highWater,
    ids: new Int32Array(count),
    flags: new Uint8Array(count),
    kind: new Uint32Array(count),
    from: new Uint32Array(count),
    to: new Uint32Array(count),
    depositedBy: new Uint32Array(count),
    depositedAt: new Float64Array(count),
    digest: new Uint8Array(count * DIGEST_BYTES),
    namedCount: new Uint8Array(count),
    named: new Int32Array(named),
    strings,
    odd: [],
  };
}

/** Throws, naming what, when an image's columns do not hold together. */
function checkImage(image: IndexImage): void {
  const count = image.ids.length;
  const columns = [image.flags, image.kind, image.from, image.to, image.depositedBy, image.depositedAt, image.namedCount];
  if (columns.some((c) => c.length !== count) || image.digest.length !== count * DIGEST_BYTES) throw new Error('columns of different lengths');
  const strings = image.strings.length;
  let namedTotal = 0;
  for (let i = 0; i < count; i++) {
    if (image.ids[i]! <= (i === 0 ? 0 : image.ids[i - 1]!)) throw new Error('ids not ascending');
    const whole = (image.flags[i]! & WHOLE) !== 0 && (image.flags[i]! & UNVERIFIED) === 0;
    if (!whole || image.namedCount[i]! > MAX_NAMED_IDS) throw new Error('a record that is not whole, or names too many ids');
    const outOfRange =
      image.kind[i]! > strings || image.from[i]! > strings || image.to[i]! > strings ||
      image.depositedBy[i]! === 0 || image.depositedBy[i]! > strings;
    if (outOfRange) throw new Error('a string number out of range');
    namedTotal += image.namedCount[i]!;
  }
  if (namedTotal !== image.named.length) throw new Error('named ids do not add up');
  for (const m of image.named) if (m <= 0) throw new Error('a named id out of range');
  for (const [i] of image.odd) if (!(i >= 0 && i < count)) throw new Error('an odd text out of range');
}

type Column = Int32Array | Uint32Array | Uint8Array | Float64Array;

/** A column with room for at least `need` entries, its contents kept (growing by half, so appends stay cheap). */
export function grown<T extends Column>(column: T, need: number): T {
  if (need <= column.length) return column;
  const next = new (column.constructor as new (length: number) => T)(Math.max(need, Math.ceil(column.length * 1.5) + 16));
  next.set(column);
  return next;
}
