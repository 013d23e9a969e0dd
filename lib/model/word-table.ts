/**
 * The words of the records a process has read for the `text` filter
 * (store/index/text-index.ts reads them; this holds them), compact and
 * bounded whatever the records say, since anyone who may append chooses
 * their words:
 *
 * - No object per word or per record: each distinct word is held once (a
 *   string and its number); a record read is a "doc", a run of its word
 *   numbers, ascending, in one Int32Array pool; each word's docs are a chain
 *   through that pool, in the order read. 8 bytes per (record, word) pair
 *   and one Map entry per record, as the record index keeps its columns.
 * - A record with more than `recordWords` distinct words (a dump of
 *   distinct short words, or a large log) takes no place in the shared word
 *   table: it is held as the sorted 52-bit hashes of its words, 8 bytes a
 *   word, found by a query that looks at every such record (hashes keyed by
 *   seeds drawn per process, so a record is found by a word it does not
 *   hold only by a 2^-52 chance a word).
 * - All of it is held to `bytes`, an estimate of the heap it takes. What
 *   does not fit is refused (`add` answers false); nothing thrown while a
 *   record is added (V8's `Map maximum size exceeded` among them) leaves
 *   the table broken: that record is held by its hashes instead.
 *
 * A removed record's doc stays in the pool, unreachable (a removal is rare:
 * a vanished file), and counted against the budget.
 */
import { randomInt } from 'node:crypto';
import { grown } from './index-columns.js';

/** Bytes of a record's digest a shared row keeps: enough to tell one record's bytes from another's. */
export const DIGEST_PREFIX = 8;

/** The table's rows in id order, as the shared file (store/index/text-index-file.ts) holds them. */
export interface TextImage {
  /** Word i is words[i]. */
  words: string[];
  /** Each row's record, ascending. */
  ids: Int32Array;
  /** How many distinct words each row holds. */
  lengths: Int32Array;
  /** The first DIGEST_PREFIX bytes of each row's record digest. */
  digests: Uint8Array;
  /** Each row's word numbers, ascending, row after row. */
  pool: Int32Array;
}

/**
 * What the estimate charges, in bytes, measured with `node --expose-gc`
 * (test/store/index/text-memory.process.test.ts holds the index to it): a
 * new word, its string (two bytes a character at most) and its Map entry
 * and chain ends; a (record, word) pair; a record, its Map entry and doc
 * columns; a hashed record's array, and each of its hashes.
 */
const WORD_COST = 96;
const PAIR_COST = 8;
const DOC_COST = 64;
const HASHED_COST = 160;
const HASH_COST = 8;

export class WordTable {
  /** Each distinct word's number. */
  private readonly words = new Map<string, number>();
  /** By word number: its chain's first and last pool position (-1: none yet), and how many docs it holds (removed ones too: only to pick the rarest). */
  private head = new Int32Array(1024).fill(-1);
  private tail = new Int32Array(1024).fill(-1);
  private docsOfWord = new Int32Array(1024);
  /** The pool: each doc's run; and for each position the next position holding the same word (-1 ends the chain). */
  private pool = new Int32Array(4096);
  private next = new Int32Array(4096);
  private used = 0;
  /** By doc: the record it was read for, and where its run starts (ascending, so a position's doc is found by a search). */
  private docId = new Int32Array(1024);
  private docStart = new Int32Array(1024);
  private docs = 0;
  /** The doc each record's words are held under now. */
  private readonly docOf = new Map<number, number>();
  /** Records held by their words' hashes, sorted. */
  private readonly hashed = new Map<number, Float64Array>();
  /** The estimated heap held, in bytes. */
  private spent = 0;
  private readonly seedA = randomInt(2 ** 31);
  private readonly seedB = randomInt(2 ** 31);

  constructor(private readonly limits: { recordWords: number; bytes: number }) {}

  get footprint(): { words: number; pairs: number; records: number; hashed: number; bytes: number } {
    return { words: this.words.size, pairs: this.used, records: this.docOf.size, hashed: this.hashed.size, bytes: this.spent };
  }

  /** Records held (in the table or by hashes). */
  get size(): number {
    return this.docOf.size + this.hashed.size;
  }

  has(n: number): boolean {
    return this.docOf.has(n) || this.hashed.has(n);
  }

  /** Holds record `n`'s words (distinct, folded); false when they do not fit the budget. */
  add(n: number, words: readonly string[]): boolean {
    return (words.length <= this.limits.recordWords && this.addDoc(n, words)) || this.addHashed(n, words);
  }

  forget(n: number): void {
    this.docOf.delete(n);
    this.hashed.delete(n);
  }

  /** Ids (ascending) of the records held that hold every word. */
  holding(words: readonly string[]): number[] {
    const out: number[] = [];
    const numbers = words.map((word) => this.words.get(word));
    if (numbers.every((w) => w !== undefined)) {
      const [rarest, ...more] = (numbers as number[]).sort((a, b) => this.docsOfWord[a]! - this.docsOfWord[b]!);
      for (let p = this.head[rarest!]!; p !== -1; p = this.next[p]!) {
        const doc = this.docAt(p);
        const n = this.docId[doc]!;
        if (this.docOf.get(n) === doc && more.every((w) => this.docHolds(doc, w))) out.push(n);
      }
    }
    if (this.hashed.size > 0) {
      const hashes = words.map((word) => this.hash(word));
      for (const [n, held] of this.hashed) if (hashes.every((h) => sortedHas(held, h))) out.push(n);
    }
    for (let i = 1; i < out.length; i++) if (out[i - 1]! >= out[i]!) return out.sort((a, b) => a - b); // read out of order (a lower id landed late)
    return out;
  }

  /** Whether record `n` (read already) holds `word`. */
  holdsWord(n: number, word: string): boolean {
    const doc = this.docOf.get(n);
    if (doc !== undefined) {
      const w = this.words.get(word);
      return w !== undefined && this.docHolds(doc, w);
    }
    const held = this.hashed.get(n);
    return held !== undefined && sortedHas(held, this.hash(word));
  }

  /** Holds `n`'s words in the table; false (nothing held) when they do not fit or the table cannot take them. */
  private addDoc(n: number, words: readonly string[]): boolean {
    const length = words.length;
    let cost = DOC_COST + length * (PAIR_COST + WORD_COST); // as if every word were new: counted exactly only near the budget
    if (this.spent + cost > this.limits.bytes) {
      let known = 0;
      for (const word of words) if (this.words.has(word)) known++;
      cost -= known * WORD_COST;
      if (this.spent + cost > this.limits.bytes) return false;
    }
    const wordsBefore = this.words.size;
    try {
      this.reserve(this.docs + 1, this.used + length);
      const start = this.used;
      for (let i = 0; i < length; i++) this.pool[start + i] = this.wordNumber(words[i]!);
      this.pool.subarray(start, start + length).sort();
      this.link(start, length);
      this.newDoc(n, start, length);
      this.spent += DOC_COST + length * PAIR_COST + (this.words.size - wordsBefore) * WORD_COST;
      return true;
    } catch {
      // A Map or an array past what V8 allows: the words numbered so far stay (and are charged); nothing points at a half doc.
      this.spent += (this.words.size - wordsBefore) * WORD_COST;
      return false;
    }
  }

  /** Holds `n` by its words' hashes; false past the budget (or if that throws). */
  private addHashed(n: number, words: readonly string[]): boolean {
    const cost = HASHED_COST + words.length * HASH_COST;
    if (this.spent + cost <= this.limits.bytes) {
      try {
        const held = new Float64Array(words.length);
        for (let i = 0; i < words.length; i++) held[i] = this.hash(words[i]!);
        this.hashed.set(n, held.sort());
        this.spent += cost;
        return true;
      } catch {
        // as below
      }
    }
    return false;
  }

  /**
   * Takes the rows `take` of `image` (records this holds nothing for, their
   * digests checked by the caller); false, taking nothing, when they do not
   * fit the budget or the image names a word twice.
   */
  adopt(image: TextImage, take: readonly number[]): boolean {
    const starts = new Int32Array(image.ids.length + 1);
    for (let i = 0; i < image.ids.length; i++) starts[i + 1] = starts[i]! + image.lengths[i]!;
    let pairs = 0;
    for (const i of take) pairs += image.lengths[i]!;
    const cost = image.words.length * WORD_COST + pairs * PAIR_COST + take.length * DOC_COST;
    if (this.spent + cost > this.limits.bytes) return false;
    // Numbered as in the file when this holds no word yet (the usual case: each row stays as it is), else renumbered and each row sorted again.
    const identity = this.words.size === 0;
    if (!identity && new Set(image.words).size !== image.words.length) return false;
    const number = new Int32Array(image.words.length);
    this.roomForWords(this.words.size + image.words.length);
    for (let w = 0; w < image.words.length; w++) number[w] = this.wordNumber(image.words[w]!);
    if (identity && this.words.size !== image.words.length) {
      this.words.clear(); // a word twice: nothing is taken
      return false;
    }
    this.reserve(this.docs + take.length, this.used + pairs);
    for (const i of take) {
      const start = this.used;
      const length = image.lengths[i]!;
      const row = image.pool.subarray(starts[i]!, starts[i + 1]!);
      if (identity) this.pool.set(row, start);
      else {
        for (let k = 0; k < length; k++) this.pool[start + k] = number[row[k]!]!;
        this.pool.subarray(start, start + length).sort();
      }
      this.link(start, length);
      this.newDoc(image.ids[i]!, start, length);
    }
    this.spent += cost;
    return true;
  }

  /** The rows of the records held in the table whose digest the record index holds, in id order. */
  image(digestInto: (n: number, into: Uint8Array, at: number) => boolean): TextImage {
    // The docs held now, in id order: the order read, but for a lower id that landed late.
    const current: number[] = [];
    for (let doc = 0; doc < this.docs; doc++) if (this.docOf.get(this.docId[doc]!) === doc) current.push(doc);
    for (let i = 1; i < current.length; i++) {
      if (this.docId[current[i - 1]!]! > this.docId[current[i]!]!) {
        current.sort((a, b) => this.docId[a]! - this.docId[b]!);
        break;
      }
    }
    const ids = new Int32Array(current.length);
    const lengths = new Int32Array(current.length);
    const digests = new Uint8Array(current.length * DIGEST_PREFIX);
    let rows = 0;
    let pairs = 0;
    for (const doc of current) {
      if (!digestInto(this.docId[doc]!, digests, rows * DIGEST_PREFIX)) continue;
      current[rows] = doc;
      ids[rows] = this.docId[doc]!;
      lengths[rows] = this.docEnd(doc) - this.docStart[doc]!;
      pairs += lengths[rows++]!;
    }
    const pool = new Int32Array(pairs);
    for (let r = 0, k = 0; r < rows; r++) {
      const start = this.docStart[current[r]!]!;
      for (let p = 0; p < lengths[r]!; p++) pool[k++] = this.pool[start + p]!;
    }
    return {
      words: [...this.words.keys()], // in number order: numbers are given in the order words are first seen
      ids: ids.slice(0, rows),
      lengths: lengths.slice(0, rows),
      digests: digests.slice(0, rows * DIGEST_PREFIX),
      pool,
    };
  }

  private wordNumber(word: string): number {
    let w = this.words.get(word);
    if (w === undefined) {
      w = this.words.size;
      if (w >= this.head.length) this.roomForWords(w + 1);
      this.words.set(word, w);
    }
    return w;
  }

  private roomForWords(count: number): void {
    if (count <= this.head.length) return;
    const from = this.head.length;
    this.head = grown(this.head, count);
    this.tail = grown(this.tail, count);
    this.docsOfWord = grown(this.docsOfWord, count);
    this.head.fill(-1, from);
    this.tail.fill(-1, from);
  }

  private reserve(docs: number, used: number): void {
    if (docs > this.docId.length) {
      this.docId = grown(this.docId, docs);
      this.docStart = grown(this.docStart, docs);
    }
    if (used > this.pool.length) {
      this.pool = grown(this.pool, used);
      this.next = grown(this.next, used);
    }
  }

  private newDoc(n: number, start: number, length: number): void {
    const doc = this.docs++;
    this.docId[doc] = n;
    this.docStart[doc] = start;
    this.used = start + length;
    this.docOf.set(n, doc);
  }

  /** Puts pool positions start… on their words' chains. */
  private link(start: number, length: number): void {
    for (let p = start; p < start + length; p++) {
      const w = this.pool[p]!;
      this.next[p] = -1;
      if (this.tail[w] === -1) this.head[w] = p;
      else this.next[this.tail[w]!] = p;
      this.tail[w] = p;
      this.docsOfWord[w]!++;
    }
  }

  private docEnd(doc: number): number {
    return doc + 1 < this.docs ? this.docStart[doc + 1]! : this.used;
  }

  /** The doc whose run holds pool position `p`. */
  private docAt(p: number): number {
    let lo = 0;
    let hi = this.docs;
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (this.docStart[mid]! <= p) lo = mid;
      else hi = mid;
    }
    return lo;
  }

  private docHolds(doc: number, w: number): boolean {
    let lo = this.docStart[doc]!;
    let hi = this.docEnd(doc);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.pool[mid]!;
      if (at === w) return true;
      if (at < w) lo = mid + 1;
      else hi = mid;
    }
    return false;
  }

  /** A word's 52-bit hash, keyed by this process's seeds (two 32-bit lanes, murmur3's mixing). */
  private hash(word: string): number {
    let a = this.seedA;
    let b = this.seedB;
    for (let i = 0; i < word.length; i++) {
      const c = word.charCodeAt(i);
      a = Math.imul(rotl(a ^ Math.imul(c, 0xcc9e2d51), 15), 0x1b873593);
      b = Math.imul(rotl(b ^ Math.imul(c, 0x85ebca6b), 13), 0xc2b2ae35) + 0xe6546b64;
    }
    return (fmix(a ^ word.length) >>> 0) * 0x100000 + (fmix(b ^ a) >>> 12);
  }
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function sortedHas(list: Float64Array, h: number): boolean {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < h) lo = mid + 1;
    else hi = mid;
  }
  return lo < list.length && list[lo] === h;
}
