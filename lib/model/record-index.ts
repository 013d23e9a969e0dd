/**
 * What one server process knows about the corpus, held in memory: which ids
 * are held, what each held record claims, who names whom. It answers exists,
 * list_relays and list_replies without touching the disk: the store feeds it
 * from its snapshot, its scan, its own appends and the watcher. KNOWN_MISSING
 * is derived from the checked rows (known-missing.ts). Compact, because every process of a
 * swarm holds one: no object per record (index-columns.ts has the rows;
 * docs/performance-tables.md the bytes per record).
 *
 * An unverified row (`addUnverified`) holds a record as a first look found
 * it: claiming what its header lines say, no deposit kept, no part in the
 * checked naming chains. A query that needs more (its meta, a filter its
 * header matches, who names an id, the missing ids) has it verified first,
 * through the one callback here (the lazy indexer's `Verifier`). A check can
 * only take claims away (a damaged file claims nothing), so a filter its
 * header cannot match is decided without one.
 */
import type { Deposit } from './deposit.js';
import { matches, parseRecipients, type RecordFilter } from './filter.js';
import { idShape } from './ids.js';
import { AUTHORED, DIGEST_BYTES, HAS_PARENT, IndexColumns, UNVERIFIED, WHOLE, type IndexImage } from './index-columns.js';
import { KnownMissing } from './known-missing.js';
import { NamingChains } from './naming-chains.js';
import type { RecordClaims } from './record.js';
import { depositorLabel, distinctNamed, entryOf, type IndexEntry } from './record-meta.js';
import { StringTable } from './string-table.js';

export type { IndexImage } from './index-columns.js';
export type { IndexEntry, RecordMeta } from './record-meta.js';

export type IdState = 'PRESENT' | 'KNOWN_MISSING' | 'UNKNOWN';

/**
 * Checks the file of unverified record `n` when a query needs its checked
 * row: answers by calling `verified` (whole, or damaged) or `remove` (gone)
 * on the index, synchronously.
 */
export type Verifier = (n: number) => void;

export class RecordIndex {
  private c: IndexColumns;
  /** Who the checked rows name, and so the KNOWN_MISSING ids. */
  private readonly missing = new KnownMissing();
  /** Who the unverified rows name, apart: an unchecked claim makes no id KNOWN_MISSING. */
  private readonly unchecked = new NamingChains();
  /** `has`, made once: it is asked for every id every record names. */
  private readonly isHeld = (n: number): boolean => this.has(n);
  /** The highest id ever held or issued, even if its file has since vanished. */
  private highWater = 0;
  /**
   * The recipients each distinct to: text names, split once (spec §8a): by
   * its number in the string table, so a swarm's few to: values are parsed
   * once each, however many records carry them.
   */
  private readonly recipientsOfTo = new Map<number, readonly string[]>();
  private unverified = 0;
  private verify: Verifier | null = null;

  /** `format` writes an id of the store's width (RecordMeta carries ids as text). */
  constructor(
    private readonly format: (n: number) => string = idShape().format,
    strings: StringTable = new StringTable(),
  ) {
    this.c = new IndexColumns(strings);
  }

  get size(): number {
    return this.c.count;
  }

  get highest(): number {
    return this.highWater;
  }

  /** Raises the high-water mark (from the issued log, or an id seen taken). */
  noteIssued(n: number): void {
    if (n > this.highWater) this.highWater = n;
  }

  has(n: number): boolean {
    return this.c.heldAt(this.c.position(n), n);
  }

  get(n: number): IndexEntry | undefined {
    this.settle(n);
    const at = this.c.position(n);
    return this.c.heldAt(at, n) ? entryOf(this.c, n, this.c.slotAt[at]!, this.format) : undefined;
  }

  /** Adds a held, checked record (null deposit and claims: damaged). Returns false when it was already held (nothing changes). */
  add(n: number, deposit: Deposit | null, claims: RecordClaims | null): boolean {
    const whole = deposit !== null && claims !== null;
    const slot = this.newRow(n, whole ? distinctNamed(claims) : []);
    if (slot === null) return false;
    this.fill(slot, n, deposit, claims);
    return true;
  }

  /**
   * Holds record `n` as a first look found it, unchecked (see the top of this
   * file). Returns false when it was already held.
   */
  addUnverified(n: number, claims: RecordClaims): boolean {
    if (!this.verify) throw new Error('an unverified record needs a verifier (setVerifier)');
    const named = distinctNamed(claims);
    const slot = this.newRow(n, named);
    if (slot === null) return false;
    const c = this.c;
    c.flags[slot] = UNVERIFIED | (claims.parent !== null ? HAS_PARENT : 0);
    c.kind[slot] = c.strings.intern(claims.kind);
    c.from[slot] = c.strings.intern(claims.from);
    c.to[slot] = c.strings.intern(claims.to);
    this.missing.held(n);
    for (let i = 0; i < named.length; i++) this.unchecked.link(c, c.namedStart[slot]! + i, named[i]!, n);
    this.unverified++;
    return true;
  }

  /** Who checks an unverified record's file (the corpus indexer); needed before addUnverified. */
  setVerifier(verify: Verifier): void {
    this.verify = verify;
  }

  isUnverified(n: number): boolean {
    const at = this.c.position(n);
    return this.c.heldAt(at, n) && (this.c.flags[this.c.slotAt[at]!]! & UNVERIFIED) !== 0;
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
    if (!this.isUnverified(n)) return;
    const at = this.c.position(n);
    this.dropSlot(this.c.slotAt[at]!);
    const slot = this.c.newSlot(deposit !== null && claims !== null ? distinctNamed(claims).length : 0);
    this.c.slotAt[at] = slot;
    this.fill(slot, n, deposit, claims);
  }

  /** Drops a record whose file is gone. The high-water mark stays: ids are never reused. */
  remove(n: number): boolean {
    const at = this.c.position(n);
    if (!this.c.heldAt(at, n)) return false;
    const slot = this.c.slotAt[at]!;
    this.c.removeAt(at);
    this.dropSlot(slot);
    this.missing.removed(n);
    return true;
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
    return Array.from(this.c.ids.subarray(this.c.position(after + 1), this.c.count));
  }

  /** KNOWN_MISSING ids greater than `after`, ascending. */
  knownMissingAfter(after: number): number[] {
    this.settleAllNaming();
    return this.missing.after(after);
  }

  /** Whether some KNOWN_MISSING id is `n` or above (a list after `n` still has missing ids to show). */
  missingFrom(n: number): boolean {
    this.settleAllNaming();
    return this.missing.anyFrom(n);
  }

  /** Held records naming `n` in parent:/ref:, ascending. */
  repliesTo(n: number): number[] {
    this.settleNaming(n);
    return this.missing.namersOf(this.c, n).sort((a, b) => a - b);
  }

  /** The highest id held now (0 when none): what a wait's cursor covers. */
  highestHeld(): number {
    return this.c.count ? this.c.ids[this.c.count - 1]! : 0;
  }

  /**
   * Whether held record `n` matches `filter` (spec §8a), from the columns:
   * no RecordMeta is built. A damaged record claims nothing, so it matches
   * only the empty filter.
   */
  matches(n: number, filter: RecordFilter | null): boolean {
    if (!this.has(n)) return false;
    if (!filter) return true;
    if (!this.matchesAt(this.c.position(n), filter)) return false; // what it claims cannot match, checked or not
    this.settle(n); // an unverified record's header says it may: its file decides
    return this.has(n) && this.matchesAt(this.c.position(n), filter);
  }

  /**
   * Held ids greater than `after` that match `filter`, ascending; at most
   * `limit` of them, so that a caller walking a large store in batches (a
   * catch-up: store.eachHeldAfter) never holds the whole list.
   */
  matchingAfter(after: number, filter: RecordFilter | null, limit = Infinity): number[] {
    const c = this.c;
    const start = c.position(after + 1);
    if (!filter) return Array.from(c.ids.subarray(start, Math.min(c.count, start + limit)));
    const out: number[] = [];
    if (filter.repliesTo !== undefined) {
      // replies_to narrows to the few records naming one id: start from those.
      for (const m of this.repliesTo(filter.repliesTo)) if (m > after && out.length < limit && this.matches(m, filter)) out.push(m);
      return out;
    }
    for (let at = start; at < c.count && out.length < limit; at++) {
      if (!this.matchesAt(at, filter)) continue;
      if (c.flags[c.slotAt[at]!]! & UNVERIFIED) {
        at = this.settledAt(c.ids[at]!) - 1; // its header says it may match: its file decides, and it is looked at again
        continue;
      }
      out.push(c.ids[at]!);
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
    const c = this.c;
    let found = 0;
    for (let at = c.count - 1; at >= 0; at--) {
      if (filter && !this.matchesAt(at, filter)) continue;
      if (filter && c.flags[c.slotAt[at]!]! & UNVERIFIED) {
        const n = c.ids[at]!;
        const p = this.settledAt(n);
        at = c.heldAt(p, n) ? p + 1 : p; // looked at again, or (gone) on to the one below
        continue;
      }
      if (++found === count) return c.ids[at]! - 1;
    }
    return 0;
  }

  /**
   * Copies the first `length` bytes of held record `n`'s digest, as its checked row holds it, into `into` at `at`, reading
   * no file; false (nothing copied) when the row is unverified or damaged, or its digest text is not canonical.
   */
  digestInto(n: number, into: Uint8Array, at: number, length: number): boolean {
    const c = this.c;
    const position = c.position(n);
    if (!c.heldAt(position, n)) return false;
    const slot = c.slotAt[position]!;
    if ((c.flags[slot]! & (WHOLE | UNVERIFIED)) !== WHOLE || c.oddText.get(slot)?.digest) return false;
    for (let i = 0; i < length; i++) into[at + i] = c.digest[slot * DIGEST_BYTES + i]!;
    return true;
  }

  /** Every held id, ascending (a copy: the index may change while the caller walks it). */
  heldIds(): Int32Array {
    return this.c.ids.slice(0, this.c.count);
  }

  /** The whole records as flat columns in id order, for a snapshot (damaged and unverified records are left out: they are read again). */
  toImage(): IndexImage {
    return this.c.toImage(this.highWater);
  }

  /**
   * Fills an empty index from an image. Throws, changing nothing, when the
   * image does not hold together (a snapshot is then not used).
   */
  load(image: IndexImage): void {
    if (this.c.count !== 0 || this.c.slots !== 0) throw new Error('an index is loaded from an image only while it is empty');
    const c = IndexColumns.fromImage(image);
    this.c = c;
    this.recipientsOfTo.clear(); // keyed by string numbers of the table replaced
    this.highWater = Math.max(this.highWater, image.highWater, c.count ? c.ids[c.count - 1]! : 0);
    this.coverHeads();
    this.missing.loaded(c, this.isHeld);
  }

  // ---- rows ------------------------------------------------------------------

  /** A fresh slot for `n` in id order, with room for its named ids; null when `n` is held already. */
  private newRow(n: number, named: number[]): number | null {
    const at = this.c.position(n);
    if (this.c.heldAt(at, n)) return null;
    const slot = this.c.newSlot(named.length);
    this.c.named.set(named, this.c.namedStart[slot]!);
    this.c.insertAt(at, n, slot);
    if (n > this.highWater) {
      this.highWater = n;
      this.coverHeads();
    }
    return slot;
  }

  /** Writes a checked record's row (nulls: damaged, claiming nothing); its named ids are in its slot already, or are given by `claims`. */
  private fill(slot: number, n: number, deposit: Deposit | null, claims: RecordClaims | null): void {
    const c = this.c;
    let flags = 0;
    if (deposit !== null && claims !== null) {
      flags = WHOLE | (deposit.provenance === 'authored' ? AUTHORED : 0) | (claims.parent !== null ? HAS_PARENT : 0);
      c.kind[slot] = c.strings.intern(claims.kind);
      c.from[slot] = c.strings.intern(claims.from);
      c.to[slot] = c.strings.intern(claims.to);
      c.depositedBy[slot] = c.strings.intern(depositorLabel(deposit));
      c.setTexts(slot, deposit.depositedAt, deposit.digest);
      c.named.set(distinctNamed(claims), c.namedStart[slot]!);
    }
    c.flags[slot] = flags;
    this.missing.filled(c, slot, n, this.isHeld);
    this.noteIssued(n);
  }

  /** Unlinks a slot's named ids and forgets its texts (its row is removed or replaced). */
  private dropSlot(slot: number): void {
    const c = this.c;
    if (c.flags[slot]! & UNVERIFIED) {
      this.unverified--;
      for (let i = 0; i < c.namedCount[slot]!; i++) this.unchecked.unlink(c, c.namedStart[slot]! + i);
    } else this.missing.dropped(c, slot);
    c.namedCount[slot] = 0;
    c.flags[slot] = 0;
    c.oddText.delete(slot);
  }

  /**
   * Whether the held record at position `at` matches `filter`; an
   * unverified one by what its header claimed, which is the answer only
   * where that says no.
   */
  private matchesAt(at: number, filter: RecordFilter): boolean {
    const c = this.c;
    const slot = c.slotAt[at]!;
    if (!(c.flags[slot]! & (WHOLE | UNVERIFIED))) return false;
    return matches(filter, { kind: c.strings.at(c.kind[slot]!), from: c.strings.at(c.from[slot]!), recipients: this.recipients(c.to[slot]!), named: c.namedOf(slot) });
  }

  private recipients(to: number): readonly string[] {
    let names = this.recipientsOfTo.get(to);
    if (!names) this.recipientsOfTo.set(to, (names = parseRecipients(this.c.strings.at(to))));
    return names;
  }

  /** Chain heads are kept in a typed array up to about the highest id (where nearly every named id is); bounded by the count, so one stray huge id costs nothing. */
  private coverHeads(): void {
    const n = Math.min(this.highWater + 1, 2 * this.c.count + 65_536);
    this.missing.cover(n);
    if (this.verify) this.unchecked.cover(n);
  }

  // ---- unverified rows, checked when a query needs them ---------------------------

  /** Verifies record `n` if it is unverified (the verifier may find it damaged, or gone). */
  private settle(n: number): void {
    if (this.unverified === 0 || !this.isUnverified(n)) return;
    this.verify!(n);
    if (this.isUnverified(n)) this.verified(n, null, null); // a verifier that could not tell: held, claiming nothing, as a damaged file
  }

  /** Verifies record `n` if unverified; where it is now (or, gone, where it was: the position of the next id). */
  private settledAt(n: number): number {
    this.settle(n);
    return this.c.position(n);
  }

  /** Verifies every unverified record whose header names `n` in parent:/ref:. */
  private settleNaming(n: number): void {
    if (this.unverified > 0) for (const m of this.unchecked.namersOf(this.c, n)) this.settle(m);
  }

  /** Verifies every unverified record that names any id (before the missing ids are listed). Taken first: a gone one's removal moves the positions. */
  private settleAllNaming(): void {
    if (this.unverified === 0) return;
    const c = this.c;
    const picked: number[] = [];
    for (let at = 0; at < c.count; at++) if (c.flags[c.slotAt[at]!]! & UNVERIFIED && c.namedCount[c.slotAt[at]!]! > 0) picked.push(c.ids[at]!);
    for (const n of picked) this.settle(n);
  }
}
