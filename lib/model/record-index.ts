/**
 * What one server process knows about the corpus, held in memory: which ids
 * are held, what each held record claims, who names whom. It answers exists,
 * list_relays and list_replies without touching the disk. Pure: the store
 * feeds it from its snapshot, its scan, its own appends and the watcher.
 *
 * KNOWN_MISSING is derived, never stored by hand: an id named in parent:/ref:
 * of a held record and not held itself.
 *
 * Compact, because every process of a swarm holds one and a corpus only
 * grows: no object per record. Each record has a slot, and a slot is a row
 * of typed-array columns (ids as numbers, names as numbers into one
 * StringTable, the digest as 32 bytes). RecordMeta objects are made only when
 * asked for. `docs/performance-tables.md` has the bytes per record, measured.
 */
import type { Deposit, Provenance } from './deposit.js';
import { matches, parseRecipients, type RecordFilter } from './filter.js';
import { idShape } from './ids.js';
import { MAX_NAMED_IDS, type RecordClaims } from './record.js';
import { StringTable } from './string-table.js';

export type IdState = 'PRESENT' | 'KNOWN_MISSING' | 'UNKNOWN';

export interface RecordMeta {
  id: string;
  kind: string | null;
  from: string | null;
  to: string | null;
  /** The id in parent:, or null. */
  parent: string | null;
  /** The other ids named in ref:, in first-seen order. */
  refs: string[];
  depositedBy: string;
  /** The `agent:` deposit key a named stdio server wrote (stated, not verified); absent otherwise. */
  agent?: string;
  provenance: Provenance;
  depositedAt: string;
  digest: string;
}

export interface IndexEntry {
  n: number;
  /** null when the file is held but damaged: its claims cannot be trusted. */
  meta: RecordMeta | null;
  /** The id in parent:, or null. */
  parent: number | null;
  /** Every id named in parent:/ref:, distinct, the parent first. */
  named: number[];
}

/** A slot's flags. */
const WHOLE = 1;
const AUTHORED = 2;
/** The first named id is the parent. */
const HAS_PARENT = 4;
/**
 * Held, its claims as a header read found them, its file not checked yet
 * (no digest, no deposit): `addUnverified`. Such a row decides what its
 * claims cannot match; whatever they might match is checked first (`verify`).
 */
const UNVERIFIED = 8;
const DIGEST_BYTES = 32;
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

/**
 * Checks the file of unverified record `n` when a query needs its verified
 * row: answers by calling `verified` (whole, or damaged) or `remove` (gone)
 * on the index, synchronously.
 */
export type Verifier = (n: number) => void;

export class RecordIndex {
  private strings: StringTable;
  /** Held ids ascending, and the slot of each; `count` of them are in use. */
  private ids = new Int32Array(256);
  private slotAt = new Int32Array(256);
  private count = 0;
  /** Slots handed out so far (a removed record's slot is not reused). */
  private slots = 0;
  private flags = new Uint8Array(256);
  private kind = new Uint32Array(256);
  private from = new Uint32Array(256);
  private to = new Uint32Array(256);
  private depositedBy = new Uint32Array(256);
  private depositedAt = new Float64Array(256);
  private digest = new Uint8Array(256 * DIGEST_BYTES);
  /** A slot's named ids are named[namedStart[slot] …+namedCount[slot]]. */
  private namedStart = new Uint32Array(256);
  private namedCount = new Uint8Array(256);
  /**
   * Named ids, and for each the id of the record naming it and the next
   * entry naming the same id (-1 ends the chain): `firstNaming` maps an id to
   * the head of the chain of records that name it.
   */
  private named = new Int32Array(1024);
  private namer = new Int32Array(1024);
  private nextNaming = new Int32Array(1024);
  private namedUsed = 0;
  private readonly firstNaming = new ChainHeads();
  /** Texts that do not fit their column, by slot. */
  private readonly oddText = new Map<number, { depositedAt: string | null; digest: string | null }>();
  /**
   * The KNOWN_MISSING ids (named, not held), kept as records come and go, so
   * that listing them costs what they number rather than every id ever named.
   */
  private readonly missing = new Set<number>();
  /** The highest id ever held or issued, even if its file has since vanished. */
  private highWater = 0;
  /**
   * The recipients each distinct to: text names, split once (SPEC §8a): by
   * its number in the string table, so a swarm's few to: values are parsed
   * once each, however many records carry them.
   */
  private readonly recipientsOfTo = new Map<number, readonly string[]>();
  /** Unverified rows held now, and the chains of the ids their claims name (apart: an unchecked claim makes no id KNOWN_MISSING). */
  private unverified = 0;
  private readonly firstUnverifiedNaming = new ChainHeads();
  private verify: Verifier | null = null;

  /** `format` writes an id of the store's width (RecordMeta carries ids as text). */
  constructor(
    private readonly format: (n: number) => string = idShape().format,
    strings: StringTable = new StringTable(),
  ) {
    this.strings = strings;
  }

  get size(): number {
    return this.count;
  }

  get highest(): number {
    return this.highWater;
  }

  /** Raises the high-water mark (from the issued log, or an id seen taken). */
  noteIssued(n: number): void {
    if (n > this.highWater) this.highWater = n;
  }

  has(n: number): boolean {
    const at = this.position(n);
    return at < this.count && this.ids[at] === n;
  }

  get(n: number): IndexEntry | undefined {
    this.settle(n);
    const at = this.position(n);
    if (at >= this.count || this.ids[at] !== n) return undefined;
    return this.entryOf(n, this.slotAt[at]!);
  }

  /** Adds a held record (ids are written with the format given to the constructor). Returns false when it was already held (nothing changes). */
  add(n: number, deposit: Deposit | null, claims: RecordClaims | null, _format?: (n: number) => string): boolean {
    const at = this.position(n);
    if (at < this.count && this.ids[at] === n) return false;
    const named = deposit !== null && claims !== null ? distinctNamed(claims) : [];
    const slot = this.newSlot(named.length);
    this.insertAt(at, n, slot);
    if (n > this.highWater) {
      this.highWater = n;
      this.coverHeads();
    }
    this.fill(slot, n, deposit, claims, named);
    return true;
  }

  /** Writes a checked record's row (nulls: damaged, claiming nothing) into a fresh slot. */
  private fill(slot: number, n: number, deposit: Deposit | null, claims: RecordClaims | null, named: number[]): void {
    let flags = 0;
    if (deposit !== null && claims !== null) {
      flags = WHOLE | (deposit.provenance === 'authored' ? AUTHORED : 0) | (claims.parent !== null ? HAS_PARENT : 0);
      this.kind[slot] = this.strings.intern(claims.kind);
      this.from[slot] = this.strings.intern(claims.from);
      this.to[slot] = this.strings.intern(claims.to);
      this.depositedBy[slot] = this.strings.intern(depositorLabel(deposit));
      this.setTexts(slot, deposit.depositedAt, deposit.digest);
    }
    this.flags[slot] = flags;
    this.missing.delete(n);
    const start = this.namedStart[slot]!;
    for (let i = 0; i < named.length; i++) this.link(start + i, named[i]!, n, this.firstNaming);
    this.noteIssued(n);
  }

  /**
   * Holds record `n` as a header read found it, unchecked: what its
   * `claims` cannot match is decided from them, and anything else about it
   * (its deposit, a match, the ids it makes KNOWN_MISSING) waits for the
   * verifier. Returns false when it was already held.
   */
  addUnverified(n: number, claims: RecordClaims): boolean {
    if (!this.verify) throw new Error('an unverified record needs a verifier (setVerifier)');
    const at = this.position(n);
    if (at < this.count && this.ids[at] === n) return false;
    const named = distinctNamed(claims);
    const slot = this.newSlot(named.length);
    this.insertAt(at, n, slot);
    if (n > this.highWater) {
      this.highWater = n;
      this.coverHeads();
    }
    this.flags[slot] = UNVERIFIED | (claims.parent !== null ? HAS_PARENT : 0);
    this.kind[slot] = this.strings.intern(claims.kind);
    this.from[slot] = this.strings.intern(claims.from);
    this.to[slot] = this.strings.intern(claims.to);
    this.missing.delete(n);
    const start = this.namedStart[slot]!;
    for (let i = 0; i < named.length; i++) this.link(start + i, named[i]!, n, this.firstUnverifiedNaming);
    this.unverified++;
    return true;
  }

  /** Who checks an unverified record's file (the corpus indexer); needed before addUnverified. */
  setVerifier(verify: Verifier): void {
    this.verify = verify;
  }

  isUnverified(n: number): boolean {
    const at = this.position(n);
    return at < this.count && this.ids[at] === n && (this.flags[this.slotAt[at]!]! & UNVERIFIED) !== 0;
  }

  /** Unverified rows held now. */
  get unverifiedCount(): number {
    return this.unverified;
  }

  /**
   * The verifier's answer for unverified record `n`: its deposit and claims
   * as its file says now, or nulls when the file is damaged (held, claiming
   * nothing, as `add` holds one). The row keeps its place in id order.
   */
  verified(n: number, deposit: Deposit | null, claims: RecordClaims | null): void {
    const at = this.position(n);
    if (at >= this.count || this.ids[at] !== n || !(this.flags[this.slotAt[at]!]! & UNVERIFIED)) return;
    this.dropSlot(this.slotAt[at]!);
    const named = deposit !== null && claims !== null ? distinctNamed(claims) : [];
    const slot = this.newSlot(named.length);
    this.slotAt[at] = slot;
    this.fill(slot, n, deposit, claims, named);
  }

  /** Drops a record whose file is gone. The high-water mark stays: ids are never reused. */
  remove(n: number): boolean {
    const at = this.position(n);
    if (at >= this.count || this.ids[at] !== n) return false;
    const slot = this.slotAt[at]!;
    this.ids.copyWithin(at, at + 1, this.count);
    this.slotAt.copyWithin(at, at + 1, this.count);
    this.count--;
    this.dropSlot(slot);
    if (this.firstNaming.has(n)) this.missing.add(n);
    return true;
  }

  /** Unlinks a slot's named ids and forgets its texts (its row is removed or replaced). */
  private dropSlot(slot: number): void {
    const heads = this.flags[slot]! & UNVERIFIED ? this.firstUnverifiedNaming : this.firstNaming;
    if (this.flags[slot]! & UNVERIFIED) this.unverified--;
    const start = this.namedStart[slot]!;
    for (let i = 0; i < this.namedCount[slot]!; i++) this.unlink(start + i, heads);
    this.namedCount[slot] = 0;
    this.flags[slot] = 0;
    this.oddText.delete(slot);
  }

  state(n: number | null): IdState {
    if (n === null) return 'UNKNOWN';
    if (this.has(n)) return 'PRESENT';
    return this.isKnownMissing(n) ? 'KNOWN_MISSING' : 'UNKNOWN';
  }

  isKnownMissing(n: number): boolean {
    this.settleNaming(n);
    return this.missing.has(n);
  }

  /** Held ids greater than `after`, ascending. */
  presentAfter(after: number): number[] {
    return Array.from(this.ids.subarray(this.position(after + 1), this.count));
  }

  /** KNOWN_MISSING ids greater than `after`, ascending. */
  knownMissingAfter(after: number): number[] {
    this.settleWhere((slot) => this.namedCount[slot]! > 0);
    const out: number[] = [];
    for (const m of this.missing) if (m > after) out.push(m);
    return out.sort((a, b) => a - b);
  }

  /** Whether some KNOWN_MISSING id is `n` or above (a list after `n` still has missing ids to show). */
  missingFrom(n: number): boolean {
    this.settleWhere((slot) => this.namedCount[slot]! > 0);
    for (const m of this.missing) if (m >= n) return true;
    return false;
  }

  /** Held records naming `n` in parent:/ref:, ascending. */
  repliesTo(n: number): number[] {
    this.settleNaming(n);
    const out: number[] = [];
    for (let e = this.firstNaming.get(n); e !== -1; e = this.nextNaming[e]!) out.push(this.namer[e]!);
    return out.sort((a, b) => a - b);
  }

  /** The highest id held now (0 when none): what a wait's cursor covers. */
  highestHeld(): number {
    return this.count ? this.ids[this.count - 1]! : 0;
  }

  /**
   * Whether held record `n` matches `filter` (SPEC §8a), from the columns:
   * no RecordMeta is built. A damaged record claims nothing, so it matches
   * only the empty filter.
   */
  matches(n: number, filter: RecordFilter | null): boolean {
    if (!this.has(n)) return false;
    if (!filter) return true;
    if (!this.matchesAt(this.position(n), filter)) return false; // what it claims cannot match, checked or not
    this.settle(n); // an unverified record's header says it may: its file decides
    return this.has(n) && this.matchesAt(this.position(n), filter);
  }

  /**
   * Whether the held record at position `at` matches `filter`; an
   * unverified one by what its header claimed, which is the answer only
   * where that says no (a damaged file claims nothing, so matches less).
   */
  private matchesAt(at: number, filter: RecordFilter): boolean {
    const slot = this.slotAt[at]!;
    if (!(this.flags[slot]! & (WHOLE | UNVERIFIED))) return false;
    const start = this.namedStart[slot]!;
    return matches(filter, {
      kind: this.strings.at(this.kind[slot]!),
      from: this.strings.at(this.from[slot]!),
      recipients: this.recipients(this.to[slot]!),
      named: this.named.subarray(start, start + this.namedCount[slot]!),
    });
  }

  /**
   * Held ids greater than `after` that match `filter`, ascending; at most
   * `limit` of them, so that a caller walking a large store in batches (a
   * catch-up: store.eachHeldAfter) never holds the whole list.
   */
  matchingAfter(after: number, filter: RecordFilter | null, limit = Infinity): number[] {
    const start = this.position(after + 1);
    if (!filter) return Array.from(this.ids.subarray(start, Math.min(this.count, start + limit)));
    const out: number[] = [];
    if (filter.repliesTo !== undefined) {
      // replies_to narrows to the few records naming one id: start from those.
      for (const m of this.repliesTo(filter.repliesTo)) if (m > after && out.length < limit && this.matches(m, filter)) out.push(m);
      return out;
    }
    for (let at = start; at < this.count && out.length < limit; at++) {
      if (!this.matchesAt(at, filter)) continue;
      if (this.flags[this.slotAt[at]!]! & UNVERIFIED) {
        at = this.settledAt(this.ids[at]!) - 1; // its header says it may match: its file decides, and it is looked at again
        continue;
      }
      out.push(this.ids[at]!);
    }
    return out;
  }

  /**
   * The mark after which the held records matching `filter` are exactly the
   * newest `count` (0 when fewer are held; the highest held id for none):
   * `tail -n`, walked from the end without listing the rest.
   */
  markBeforeNewest(count: number, filter: RecordFilter | null): number {
    if (count <= 0) return this.highestHeld();
    let found = 0;
    for (let at = this.count - 1; at >= 0; at--) {
      if (filter && !this.matchesAt(at, filter)) continue;
      if (filter && this.flags[this.slotAt[at]!]! & UNVERIFIED) {
        const n = this.ids[at]!;
        const p = this.settledAt(n);
        at = p < this.count && this.ids[p] === n ? p + 1 : p; // looked at again, or (gone) on to the one below
        continue;
      }
      if (++found === count) return this.ids[at]! - 1;
    }
    return 0;
  }

  // ---- unverified rows: checked when a query needs them ---------------------

  /** Verifies record `n` if it is unverified (the verifier may find it damaged, or gone). */
  private settle(n: number): void {
    if (this.unverified === 0 || !this.isUnverified(n)) return;
    this.verify!(n);
    if (this.isUnverified(n)) this.verified(n, null, null); // a verifier that could not tell: held, claiming nothing, as a damaged file
  }

  /** Verifies record `n` if unverified; where it is now (or, gone, where it was: the position of the next id). */
  private settledAt(n: number): number {
    this.settle(n);
    return this.position(n);
  }

  /** Verifies every unverified record whose header names `n` in parent:/ref:. */
  private settleNaming(n: number): void {
    if (this.unverified === 0) return;
    const namers: number[] = [];
    for (let e = this.firstUnverifiedNaming.get(n); e !== -1; e = this.nextNaming[e]!) namers.push(this.namer[e]!);
    for (const m of namers) this.settle(m);
  }

  /**
   * Verifies the unverified records whose slot `wanted` picks. Taken first,
   * then verified: a verifier that finds a file gone removes its row, which
   * moves the positions after it.
   */
  private settleWhere(wanted: (slot: number) => boolean): void {
    if (this.unverified === 0) return;
    const picked: number[] = [];
    for (let at = 0; at < this.count; at++) {
      const slot = this.slotAt[at]!;
      if (this.flags[slot]! & UNVERIFIED && wanted(slot)) picked.push(this.ids[at]!);
    }
    for (const n of picked) this.settle(n);
  }

  private recipients(to: number): readonly string[] {
    let names = this.recipientsOfTo.get(to);
    if (!names) this.recipientsOfTo.set(to, (names = parseRecipients(this.strings.at(to))));
    return names;
  }

  /** Every held id, ascending (a copy: the index may change while the caller walks it). */
  heldIds(): Int32Array {
    return this.ids.slice(0, this.count);
  }

  /** The whole records as flat columns in id order, for a snapshot (a damaged record is left out: it is read again). */
  toImage(): IndexImage {
    const positions: number[] = [];
    let namedTotal = 0;
    for (let i = 0; i < this.count; i++) {
      const slot = this.slotAt[i]!;
      if (!(this.flags[slot]! & WHOLE)) continue;
      positions.push(i);
      namedTotal += this.namedCount[slot]!;
    }
    const count = positions.length;
    const image: IndexImage = {
      highWater: this.highWater,
      ids: new Int32Array(count),
      flags: new Uint8Array(count),
      kind: new Uint32Array(count),
      from: new Uint32Array(count),
      to: new Uint32Array(count),
      depositedBy: new Uint32Array(count),
      depositedAt: new Float64Array(count),
      digest: new Uint8Array(count * DIGEST_BYTES),
      namedCount: new Uint8Array(count),
      named: new Int32Array(namedTotal),
      strings: this.strings.toArray(),
      odd: [],
    };
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
      const c = this.namedCount[slot]!;
      image.namedCount[i] = c;
      image.named.set(this.named.subarray(this.namedStart[slot]!, this.namedStart[slot]! + c), k);
      k += c;
      const odd = this.oddText.get(slot);
      if (odd) image.odd.push([i, odd.depositedAt, odd.digest]);
    }
    return image;
  }

  /**
   * Fills an empty index from an image. Throws, changing nothing, when the
   * image does not hold together (a snapshot is then not used).
   */
  load(image: IndexImage): void {
    if (this.count !== 0 || this.slots !== 0) throw new Error('an index is loaded from an image only while it is empty');
    const count = image.ids.length;
    const columns = [image.flags, image.kind, image.from, image.to, image.depositedBy, image.depositedAt, image.namedCount];
    if (columns.some((c) => c.length !== count) || image.digest.length !== count * DIGEST_BYTES) throw new Error('columns of different lengths');
    const table = StringTable.fromArray(image.strings);
    const strings = image.strings.length;
    let namedTotal = 0;
    for (let i = 0; i < count; i++) {
      if (image.ids[i]! <= (i === 0 ? 0 : image.ids[i - 1]!)) throw new Error('ids not ascending');
      const whole = (image.flags[i]! & WHOLE) !== 0;
      if (!whole || image.namedCount[i]! > MAX_NAMED_IDS) throw new Error('a record that is not whole, or names too many ids');
      if (image.kind[i]! > strings || image.from[i]! > strings || image.to[i]! > strings || image.depositedBy[i]! === 0 || image.depositedBy[i]! > strings) throw new Error('a string number out of range');
      namedTotal += image.namedCount[i]!;
    }
    if (namedTotal !== image.named.length) throw new Error('named ids do not add up');
    for (const m of image.named) if (m <= 0) throw new Error('a named id out of range');
    for (const [i] of image.odd) if (!(i >= 0 && i < count)) throw new Error('an odd text out of range');
    const index = this;
    index.strings = table;
    index.recipientsOfTo.clear(); // keyed by string numbers of the table being replaced
    index.reserve(count, namedTotal);
    index.ids.set(image.ids);
    for (let i = 0; i < count; i++) index.slotAt[i] = i;
    index.count = index.slots = count;
    index.flags.set(image.flags);
    index.kind.set(image.kind);
    index.from.set(image.from);
    index.to.set(image.to);
    index.depositedBy.set(image.depositedBy);
    index.depositedAt.set(image.depositedAt);
    index.digest.set(image.digest);
    index.namedCount.set(image.namedCount);
    for (const [i, depositedAt, digest] of image.odd) index.oddText.set(i, { depositedAt, digest });
    // The chains are built directly (link() would look each named id up as it
    // goes); which named ids are not held is asked once per id, at the end.
    index.named.set(image.named);
    index.highWater = Math.max(index.highWater, image.highWater, count ? image.ids[count - 1]! : 0);
    index.coverHeads();
    const { namer, nextNaming, firstNaming } = index;
    let k = 0;
    for (let i = 0; i < count; i++) {
      index.namedStart[i] = k;
      const n = image.ids[i]!;
      for (let c = image.namedCount[i]!; c > 0; c--, k++) {
        const m = image.named[k]!;
        namer[k] = n;
        nextNaming[k] = firstNaming.get(m);
        firstNaming.set(m, k);
      }
    }
    index.namedUsed = k;
    for (const m of firstNaming.keys()) if (!index.has(m)) index.missing.add(m);
    index.highWater = Math.max(index.highWater, image.highWater, count ? image.ids[count - 1]! : 0);
  }

  // ---- the columns ----------------------------------------------------------

  /** Chain heads are kept in a typed array up to about the highest id (where nearly every named id is); bounded by the count, so one stray huge id costs nothing. */
  private coverHeads(): void {
    const n = Math.min(this.highWater + 1, 2 * this.count + 65_536);
    this.firstNaming.cover(n);
    if (this.unverified > 0 || this.verify) this.firstUnverifiedNaming.cover(n);
  }

  /** First position whose id is >= n. */
  private position(n: number): number {
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

  private insertAt(at: number, n: number, slot: number): void {
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

  private newSlot(namedCount: number): number {
    this.reserve(this.slots + 1, this.namedUsed + namedCount);
    const slot = this.slots++;
    this.namedStart[slot] = this.namedUsed;
    this.namedCount[slot] = namedCount;
    this.namedUsed += namedCount;
    return slot;
  }

  private reserve(slots: number, named: number): void {
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

  private setTexts(slot: number, depositedAt: string, digest: string): void {
    const ms = Date.parse(depositedAt);
    const atFits = !Number.isNaN(ms) && new Date(ms).toISOString() === depositedAt;
    this.depositedAt[slot] = atFits ? ms : NaN;
    const digestFits = CANONICAL_DIGEST.test(digest);
    if (digestFits) this.digest.set(Buffer.from(digest.slice(7), 'hex'), slot * DIGEST_BYTES);
    else this.digest.fill(0, slot * DIGEST_BYTES, (slot + 1) * DIGEST_BYTES);
    if (!atFits || !digestFits) this.oddText.set(slot, { depositedAt: atFits ? null : depositedAt, digest: digestFits ? null : digest });
    else this.oddText.delete(slot);
  }

  /** Entry `e` says: record `by` names `m` (in the verified chains, `firstNaming`, or the unverified ones). */
  private link(e: number, m: number, by: number, heads: ChainHeads): void {
    this.named[e] = m;
    this.namer[e] = by;
    this.nextNaming[e] = heads.get(m);
    heads.set(m, e);
    if (heads === this.firstNaming && !this.has(m)) this.missing.add(m);
  }

  private unlink(e: number, heads: ChainHeads): void {
    const m = this.named[e]!;
    let previous = -1;
    let at = heads.get(m);
    while (at !== -1 && at !== e) {
      previous = at;
      at = this.nextNaming[at]!;
    }
    if (at === -1) return;
    const next = this.nextNaming[e]!;
    if (previous !== -1) this.nextNaming[previous] = next;
    else if (next !== -1) heads.set(m, next);
    else {
      heads.delete(m);
      if (heads === this.firstNaming) this.missing.delete(m); // named by nothing held any more
    }
  }

  private entryOf(n: number, slot: number): IndexEntry {
    const flags = this.flags[slot]!;
    const start = this.namedStart[slot]!;
    const named = Array.from(this.named.subarray(start, start + this.namedCount[slot]!));
    const parent = flags & HAS_PARENT ? named[0]! : null;
    if (!(flags & WHOLE)) return { n, meta: null, parent: null, named };
    const odd = this.oddText.get(slot);
    const at = odd?.depositedAt ?? new Date(this.depositedAt[slot]!).toISOString();
    const digest = odd?.digest ?? 'sha256:' + Buffer.from(this.digest.buffer, this.digest.byteOffset + slot * DIGEST_BYTES, DIGEST_BYTES).toString('hex');
    const meta: RecordMeta = {
      id: this.format(n),
      kind: this.strings.at(this.kind[slot]!),
      from: this.strings.at(this.from[slot]!),
      to: this.strings.at(this.to[slot]!),
      parent: parent === null ? null : this.format(parent),
      refs: named.slice(parent === null ? 0 : 1).map(this.format),
      ...depositorOf(this.strings.at(this.depositedBy[slot]!)!),
      provenance: flags & AUTHORED ? 'authored' : 'as-received',
      depositedAt: at,
      digest,
    };
    return { n, meta, parent, named };
  }
}

/**
 * The depositedBy column holds one string per record for who deposited it:
 * the channel label, and after a line break the `agent:` a named stdio
 * server stated (no header value holds a line break). One column, so a
 * snapshot carries it unchanged and a swarm's few labels are interned once.
 */
function depositorLabel(deposit: Deposit): string {
  return deposit.agent === undefined ? deposit.depositedBy : `${deposit.depositedBy}\n${deposit.agent}`;
}

function depositorOf(label: string): { depositedBy: string; agent?: string } {
  const cut = label.indexOf('\n');
  return cut < 0 ? { depositedBy: label } : { depositedBy: label.slice(0, cut), agent: label.slice(cut + 1) };
}

/** The ids a record names, distinct, its parent first (as parseRecord gives them; checked again here). */
function distinctNamed(claims: RecordClaims): number[] {
  const out: number[] = claims.parent !== null ? [claims.parent] : [];
  for (const m of claims.named) if (!out.includes(m)) out.push(m);
  return out;
}

type Column = Int32Array | Uint32Array | Uint8Array | Float64Array;

/** A column with room for at least `need` entries, its contents kept (growing by half, so appends stay cheap). */
function grown<T extends Column>(column: T, need: number): T {
  if (need <= column.length) return column;
  const next = new (column.constructor as new (length: number) => T)(Math.max(need, Math.ceil(column.length * 1.5) + 16));
  next.set(column);
  return next;
}

/**
 * The head of each id's naming chain (-1: named by nothing held). Ids up to
 * about the highest held one are where nearly every parent:/ref: points, so
 * they live in a typed array (4 bytes an id, no Map entry of ~40); ids above
 * it (cited before they exist) in a Map.
 */
class ChainHeads {
  private dense = new Int32Array(0);
  private readonly sparse = new Map<number, number>();

  get(m: number): number {
    return m < this.dense.length ? this.dense[m]! : (this.sparse.get(m) ?? -1);
  }

  has(m: number): boolean {
    return this.get(m) !== -1;
  }

  set(m: number, e: number): void {
    if (m < this.dense.length) this.dense[m] = e;
    else this.sparse.set(m, e);
  }

  delete(m: number): void {
    if (m < this.dense.length) this.dense[m] = -1;
    else this.sparse.delete(m);
  }

  /** Makes every id below `n` dense. */
  cover(n: number): void {
    if (n <= this.dense.length) return;
    const next = new Int32Array(Math.max(n, Math.ceil(this.dense.length * 1.5) + 1024)).fill(-1);
    next.set(this.dense);
    this.dense = next;
    for (const [m, e] of this.sparse) {
      if (m >= next.length) continue;
      next[m] = e;
      this.sparse.delete(m);
    }
  }

  *keys(): IterableIterator<number> {
    const dense = this.dense;
    for (let m = 0; m < dense.length; m++) if (dense[m] !== -1) yield m;
    yield* this.sparse.keys();
  }
}
