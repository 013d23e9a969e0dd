/**
 * The `text` filter (spec §8a filters, lib/model/filter.ts): which held
 * records hold given words. The record index keeps metadata only, and a
 * record's words are its file's to tell, so this index maps each folded word
 * to the records holding it (an inverted index), and a query costs what its
 * rarest word's list numbers, not what the store holds.
 *
 * It costs nothing until a text query comes: no word is read at start-up or
 * on an append, so the twenty servers of a swarm that never search pay for
 * none of it. The first text query reads every held record once; each query
 * after reads only the records held since (its own appends, other writers',
 * the lazy index's unverified ones alike: whatever the record index holds
 * and this has not read), so it is current from the one place that says
 * what is held.
 *
 * Its memory is bounded, whatever the records say (anyone who may append
 * chooses their words):
 *
 * - No object per word or per record: each distinct word is held once
 *   (a string and its number), and a record read is a "doc", a run of word
 *   numbers in one pool; each word's docs are a chain through that pool, in
 *   the order read. 8 bytes per (record, word) pair and one Map entry per
 *   record, as the record index keeps its columns.
 * - A record with more than `recordWords` distinct words (a dump of distinct
 *   short words, or a large log) takes no place in the shared word table: it
 *   is held as the sorted 52-bit hashes of its words, 8 bytes a word, found
 *   by a query that looks at every such record (a keyed hash, so a record
 *   holding other words is found by a word it does not hold only by a
 *   2^-52 chance a word).
 * - All of it together is held to `bytes` (an estimate of the heap it
 *   takes). A record that does not fit is read by a live wait's one check,
 *   but a query over the store then refuses `text_index_full` with a
 *   sentence, rather than read every such record on every query or let the
 *   heap grow without end. Nothing it throws while adding a record (V8's
 *   `Map maximum size exceeded` among them) leaves it broken: that record
 *   is held as hashes, or as one that did not fit, and later queries go on.
 *
 * A record whose file cannot be read whole (damaged, gone) holds no words; it
 * is read again only once its file changes (size, mtime, inode), so a
 * hundred damaged files cost a stat each per query, not a read and a hash.
 * A removed record is forgotten: its words no longer find its id, and a
 * record deposited under the id again is read afresh.
 *
 * It is the record index with the three queries that take a filter
 * (matches, matchingAfter, markBeforeNewest) answering `text` first and
 * asking the record index for the rest, so every door that filters (MCP,
 * REST, the stream, the CLI, catch-ups and live waits) gains it at once.
 */
import { randomInt } from 'node:crypto';
import { RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { searchableText, textWords, type RecordFilter } from '../../model/filter.js';
import { splitRecordFile } from '../../model/deposit.js';
import type { IdShape } from '../../model/ids.js';
import { grown } from '../../model/index-columns.js';
import { decodeRecordText, parseRecord } from '../../model/record.js';
import { RecordIndex } from '../../model/record-index.js';
import { DIGEST_PREFIX, readTextImage, writeTextImage, type TextImage } from './text-index-file.js';

/** A held record's stored file (deposit header and record), read synchronously: throws when it cannot be read. */
export type ReadFileSync = (n: number) => Buffer;
/** What a held record's file is now (inode, size, mtime), or null when there is none: a damaged record is read again only when this changes. */
export type StampSync = (n: number) => string | null;

/** How much the text index may hold. */
export interface TextIndexLimits {
  /** Distinct words of one record held in the word table; a record with more is held by its words' hashes. */
  recordWords: number;
  /** The heap the index may take, estimated, in bytes. */
  bytes: number;
  /** Records read here (not loaded) before the shared file is written: a first build, then also at least a hundredth of what it holds. */
  shareAfter: number;
}

/** Where the word index is shared with the corpus's other processes (text-index-file.ts). */
export interface SharedTextIndex {
  file: string;
  tmpDir: string;
  log: Logger;
}

export const DEFAULT_TEXT_INDEX_LIMITS: TextIndexLimits = {
  recordWords: 4096,
  bytes: 512 * 1024 * 1024,
  shareAfter: 500,
};

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

/**
 * Records read between two turns of the event loop while the word index is
 * warmed: a few ms each. Synchronous reads in slices, not fs.promises: at
 * 100k records the promise reads took four times the CPU (10.2 s against
 * 2.3 s) for the same files.
 */
const WARM_SLICE = 256;

/** The newest rows of a loaded file read from their records and compared word for word. */
const SPOT_CHECK = 8;

export class SearchableIndex extends RecordIndex {
  private readonly limits: TextIndexLimits;
  /** Each distinct word's number. */
  private readonly words = new Map<string, number>();
  /** By word number: its chain's first and last pool position (-1: none yet), and how many docs it holds (removed ones too: only to pick the rarest). */
  private head = new Int32Array(1024).fill(-1);
  private tail = new Int32Array(1024).fill(-1);
  private docsOfWord = new Int32Array(1024);
  /** The pool: a doc's distinct word numbers, ascending, one run per doc; and for each position the next position holding the same word (-1 ends the chain). */
  private pool = new Int32Array(4096);
  private next = new Int32Array(4096);
  private used = 0;
  /** By doc: the record id it was read for, and where its run starts (ascending, so a position's doc is found by a search). */
  private docId = new Int32Array(1024);
  private docStart = new Int32Array(1024);
  private docs = 0;
  /** The doc each record's words are held under now (a removed record's doc stays in the pool, unreachable). */
  private readonly docOf = new Map<number, number>();
  /** Records held by their words' hashes (too many distinct words for the table, or it threw): sorted. */
  private readonly hashed = new Map<number, Float64Array>();
  /** Records that did not fit at all: a query over the store refuses while one is held. */
  private readonly left = new Set<number>();
  /** Records whose file could not be read whole, and what the file was then. */
  private readonly damaged = new Map<number, string | null>();
  /** The estimated heap held, in bytes. */
  private spent = 0;
  private readonly seedA = randomInt(2 ** 31);
  private readonly seedB = randomInt(2 ** 31);
  /** The shared file: looked for once, before the first full read; records read here since it was loaded or written; a write under way. */
  private sharedTried = false;
  private readSinceShared = 0;
  private sharing: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly shape: IdShape,
    private readonly readFile: ReadFileSync,
    private readonly maxRecordBytes: number,
    private readonly stamp: StampSync = () => null,
    limits: Partial<TextIndexLimits> = {},
    private readonly shared: SharedTextIndex | null = null,
  ) {
    super(shape.format);
    this.limits = { ...DEFAULT_TEXT_INDEX_LIMITS, ...limits };
  }

  /** What the index holds (for tests and the bench). */
  get footprint(): { words: number; pairs: number; records: number; hashed: number; left: number; damaged: number; bytes: number } {
    return { words: this.words.size, pairs: this.used, records: this.docOf.size, hashed: this.hashed.size, left: this.left.size, damaged: this.damaged.size, bytes: this.spent };
  }

  /**
   * Reads the held records not read yet a slice at a time, letting the
   * event loop turn between slices: the store's asynchronous reads await it
   * before a text query, so the first search of a process (every record
   * read) leaves the process answering other callers meanwhile. A query
   * that comes without it reads what is left in one go.
   */
  warm(filter: RecordFilter | null): Promise<void> | undefined {
    if (!filter?.text) return undefined;
    this.warming ??= this.readUnread().finally(() => (this.warming = null));
    return this.warming;
  }

  private warming: Promise<void> | null = null;

  private async readUnread(): Promise<void> {
    this.loadShared();
    const held = this.heldIds();
    for (let from = 0; from < held.length; from += WARM_SLICE) {
      const end = Math.min(held.length, from + WARM_SLICE);
      for (let i = from; i < end; i++) this.readOne(held[i]!);
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.share();
  }

  /** Lets a write of the shared file under way finish; writes none after. */
  async close(): Promise<void> {
    while (this.sharing) await this.sharing;
    this.closed = true;
  }

  override remove(n: number): boolean {
    const removed = super.remove(n);
    this.forget(n);
    return removed;
  }

  override matches(n: number, filter: RecordFilter | null): boolean {
    if (!filter?.text) return super.matches(n, filter);
    if (!super.matches(n, rest(filter))) return false;
    this.readOne(n);
    if (this.left.has(n)) return this.holdsOnDisk(n, filter.text);
    return filter.text.every((word) => this.holdsWord(n, word));
  }

  override matchingAfter(after: number, filter: RecordFilter | null, limit = Infinity): number[] {
    if (!filter?.text) return super.matchingAfter(after, filter, limit);
    const others = rest(filter);
    const out: number[] = [];
    const candidates = this.holding(filter.text);
    for (let i = firstAbove(candidates, after); i < candidates.length && out.length < limit; i++) {
      if (super.matches(candidates[i]!, others)) out.push(candidates[i]!);
    }
    return out;
  }

  override markBeforeNewest(count: number, filter: RecordFilter | null): number {
    if (!filter?.text || count <= 0) return super.markBeforeNewest(count, filter);
    const others = rest(filter);
    const candidates = this.holding(filter.text);
    let found = 0;
    for (let i = candidates.length - 1; i >= 0; i--) {
      if (super.matches(candidates[i]!, others) && ++found === count) return candidates[i]! - 1;
    }
    return 0;
  }

  /** Ids (ascending) of the held records read so far that hold every word. */
  private holding(words: readonly string[]): number[] {
    this.catchUp();
    for (const n of this.left) {
      if (!this.has(n)) continue;
      throw new RelayError('text_index_full',
        `This server's text index is full (${Math.round(this.spent / 2 ** 20)} MiB for ${this.docOf.size + this.hashed.size} records), so a text search would miss ` +
        `${this.left.size} record(s) it could not hold. Leave text out and filter with to, from, kind or replies_to, or ask the operator to move records out of this corpus.`,
        { param: 'text', maxBytes: this.limits.bytes, left: this.left.size });
    }
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

  /** Reads every held record not read yet (all of them, on the first text query). */
  private catchUp(): void {
    this.loadShared();
    const held = this.heldIds();
    for (let i = 0; i < held.length; i++) this.readOne(held[i]!);
    this.share();
  }

  private readOne(n: number): void {
    if (this.docOf.has(n) || this.hashed.has(n) || this.left.has(n)) return;
    const was = this.damaged.get(n);
    if (was !== undefined && this.stampOf(n) === was) return; // damaged, and its file has not changed since
    let words = this.wordsOf(n);
    if (words === null) {
      // Damaged or gone. What its file is now is taken before a second read, so that a change after that read shows next time.
      const stamp = this.stampOf(n);
      words = this.wordsOf(n);
      if (words === null) {
        if (stamp !== undefined) this.damaged.set(n, stamp);
        return;
      }
    }
    this.damaged.delete(n);
    this.readSinceShared++;
    if (words.length <= this.limits.recordWords && this.addDoc(n, words)) return;
    this.addHashed(n, words);
  }

  /** A record's words, or null when its file cannot be read whole (what the record index holds as damaged holds no words either). */
  private wordsOf(n: number): string[] | null {
    try {
      const record = splitRecordFile(this.readFile(n)).record;
      parseRecord(record, this.shape, this.maxRecordBytes);
      return textWords(searchableText(decodeRecordText(record)));
    } catch {
      return null;
    }
  }

  /** What `n`'s file is now (null: none); undefined when that cannot be told (then it is simply read again). */
  private stampOf(n: number): string | null | undefined {
    try {
      return this.stamp(n);
    } catch {
      return undefined;
    }
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
      const doc = this.docs++;
      this.docId[doc] = n;
      this.docStart[doc] = start;
      this.used += length;
      this.docOf.set(n, doc);
      this.spent += DOC_COST + length * PAIR_COST + (this.words.size - wordsBefore) * WORD_COST;
      return true;
    } catch {
      // A Map or an array past what V8 allows: the words numbered so far stay (and are charged); nothing points at a half doc.
      this.spent += (this.words.size - wordsBefore) * WORD_COST;
      return false;
    }
  }

  /** Holds `n` by its words' hashes; past the budget (or if that throws), as a record that did not fit. */
  private addHashed(n: number, words: readonly string[]): void {
    const cost = HASHED_COST + words.length * HASH_COST;
    if (this.spent + cost <= this.limits.bytes) {
      try {
        const held = new Float64Array(words.length);
        for (let i = 0; i < words.length; i++) held[i] = this.hash(words[i]!);
        this.hashed.set(n, held.sort());
        this.spent += cost;
        return;
      } catch {
        // as below
      }
    }
    this.left.add(n);
  }

  private forget(n: number): void {
    this.docOf.delete(n); // its pairs stay in the pool, unreachable: a removal is rare (a vanished file), and the budget counts them
    this.hashed.delete(n);
    this.left.delete(n);
    this.damaged.delete(n);
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

  /** Whether record `n` (read already) holds `word`. */
  private holdsWord(n: number, word: string): boolean {
    const doc = this.docOf.get(n);
    if (doc !== undefined) {
      const w = this.words.get(word);
      return w !== undefined && this.docHolds(doc, w);
    }
    const held = this.hashed.get(n);
    return held !== undefined && sortedHas(held, this.hash(word));
  }

  /** A record that did not fit, read again for one live check. */
  private holdsOnDisk(n: number, words: readonly string[]): boolean {
    const held = new Set(this.wordsOf(n) ?? []);
    return words.every((word) => held.has(word));
  }

  // ---- the file shared with the corpus's other processes ----------------------

  /** Before this process's first full read: takes what the shared file holds that the records agree with. */
  private loadShared(): void {
    if (this.sharedTried || !this.shared) return;
    this.sharedTried = true;
    const image = readTextImage(this.shared.file, this.limits.bytes);
    const refused = typeof image === 'string' ? image : this.adopt(image);
    if (refused !== null) this.shared.log.debug(`not using the text index ${this.shared.file}: ${refused}; reading the records`);
  }

  /**
   * Takes the rows of `image` for records held here, not read yet, whose
   * digest is the one the record index holds; null, or why nothing was
   * taken (the newest rows taken are read and compared first: one that
   * disagrees with its record makes the whole file untrusted).
   */
  private adopt(image: TextImage): string | null {
    const docs = image.ids.length;
    const starts = new Int32Array(docs + 1);
    for (let i = 0; i < docs; i++) starts[i + 1] = starts[i]! + image.lengths[i]!;
    const take: number[] = [];
    let pairs = 0;
    for (let i = 0; i < docs; i++) {
      const n = image.ids[i]!;
      if (this.docOf.has(n) || this.hashed.has(n) || this.left.has(n)) continue;
      const digest = this.digestOf(n);
      if (digest === null || !sameBytes(digest, image.digests, i * DIGEST_PREFIX)) continue;
      take.push(i);
      pairs += image.lengths[i]!;
    }
    if (take.length === 0) return 'it holds no record held here as this store holds it';
    const cost = image.words.length * WORD_COST + pairs * PAIR_COST + take.length * DOC_COST;
    if (this.spent + cost > this.limits.bytes) return 'it holds more than the text index may';
    for (const i of take.slice(-SPOT_CHECK)) {
      const words = this.wordsOf(image.ids[i]!);
      const row = image.pool.subarray(starts[i]!, starts[i + 1]!);
      const held = new Set(words ?? []);
      if (words === null || words.length !== row.length || row.some((w) => !held.has(image.words[w]!))) {
        return `${this.shape.format(image.ids[i]!)} does not hold the words it says`;
      }
    }
    // Numbered as in the file when this holds no word yet (the usual case: each row stays as it is), else renumbered and each row sorted again.
    const identity = this.words.size === 0;
    if (!identity && new Set(image.words).size !== image.words.length) return 'it names a word twice';
    const number = new Int32Array(image.words.length);
    this.roomForWords(this.words.size + image.words.length);
    for (let w = 0; w < image.words.length; w++) number[w] = this.wordNumber(image.words[w]!);
    if (identity && this.words.size !== image.words.length) {
      this.words.clear(); // a word twice: nothing is taken
      return 'it names a word twice';
    }
    this.reserve(this.docs + take.length, this.used + pairs);
    for (const i of take) {
      const doc = this.docs;
      const start = this.used;
      const length = image.lengths[i]!;
      const row = image.pool.subarray(starts[i]!, starts[i + 1]!);
      if (identity) this.pool.set(row, start);
      else {
        for (let k = 0; k < length; k++) this.pool[start + k] = number[row[k]!]!;
        this.pool.subarray(start, start + length).sort();
      }
      this.link(start, length);
      this.docId[doc] = image.ids[i]!;
      this.docStart[doc] = start;
      this.docs++;
      this.used += length;
      this.docOf.set(image.ids[i]!, doc);
    }
    this.spent += cost;
    return null;
  }

  /** Once enough records were read here: writes what this process holds for the others, after the answer. */
  private share(): void {
    if (!this.shared || this.sharing || this.closed) return;
    if (this.readSinceShared < Math.max(this.limits.shareAfter, Math.floor(this.docOf.size / 100))) return;
    this.readSinceShared = 0;
    const { file, tmpDir, log } = this.shared;
    this.sharing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => (this.closed ? undefined : writeTextImage(file, tmpDir, this.image())))
      .catch((err: unknown) => log.debug(`could not write the text index ${file}: ${(err as Error).message}`))
      .finally(() => (this.sharing = null));
  }

  /** The rows of the records held in the table whose digest the record index holds, in id order. */
  private image(): TextImage {
    const ids = Int32Array.from(this.docOf.keys()).sort();
    const rows: number[] = [];
    let pairs = 0;
    for (const n of ids) {
      if (this.digestOf(n) === null) continue;
      const doc = this.docOf.get(n)!;
      rows.push(n);
      pairs += this.docEnd(doc) - this.docStart[doc]!;
    }
    const image: TextImage = {
      words: [...this.words.keys()], // in number order: numbers are given in the order words are first seen
      ids: Int32Array.from(rows),
      lengths: new Int32Array(rows.length),
      digests: new Uint8Array(rows.length * DIGEST_PREFIX),
      pool: new Int32Array(pairs),
    };
    let k = 0;
    rows.forEach((n, i) => {
      const doc = this.docOf.get(n)!;
      const run = this.pool.subarray(this.docStart[doc]!, this.docEnd(doc));
      image.lengths[i] = run.length;
      image.digests.set(this.digestOf(n)!.subarray(0, DIGEST_PREFIX), i * DIGEST_PREFIX);
      image.pool.set(run, k);
      k += run.length;
    });
    return image;
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

function sameBytes(a: Uint8Array, b: Uint8Array, at: number): boolean {
  for (let i = 0; i < DIGEST_PREFIX; i++) if (a[i] !== b[at + i]) return false;
  return true;
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

/** The filter without `text`, as the record index takes it (null: nothing else filters). */
function rest(filter: RecordFilter): RecordFilter | null {
  const { text: _text, ...others } = filter;
  return Object.values(others).some((v) => v !== undefined) ? others : null;
}

/** The position of the first id above `n` in an ascending list. */
function firstAbove(list: readonly number[], n: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! <= n) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
