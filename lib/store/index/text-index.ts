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
 * The words are held in a WordTable (lib/model/word-table.ts): compact, and
 * bounded whatever the records say. A record that does not fit the budget
 * is read by a live wait's one check, but a query over the store then
 * refuses `text_index_full` with a sentence, rather than read every such
 * record on every query or let the heap grow without end.
 *
 * The first process to read enough records writes the table to
 * `.state/text-index` (text-index-file.ts) after its answer; another
 * process of the corpus loads it before its first full read, believing a
 * row only where the record index holds the same digest for that record,
 * and the newest rows only once read and compared word for word.
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
import { RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { searchableText, textWords, type RecordFilter } from '../../model/filter.js';
import { splitRecordFile } from '../../model/deposit.js';
import type { IdShape } from '../../model/ids.js';
import { decodeRecordText, parseRecord } from '../../model/record.js';
import { RecordIndex } from '../../model/record-index.js';
import { DIGEST_PREFIX, WordTable, type TextImage } from '../../model/word-table.js';
import { readTextImage, writeTextImage } from './text-index-file.js';

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
  private readonly table: WordTable;
  /** Records that did not fit at all: a query over the store refuses while one is held. */
  private readonly left = new Set<number>();
  /** Records whose file could not be read whole, and what the file was then. */
  private readonly damaged = new Map<number, string | null>();
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
    this.table = new WordTable(this.limits);
  }

  /** What the index holds (for tests and the bench). */
  get footprint(): WordTable['footprint'] & { left: number; damaged: number } {
    return { ...this.table.footprint, left: this.left.size, damaged: this.damaged.size };
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
    return filter.text.every((word) => this.table.holdsWord(n, word));
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
      const { bytes } = this.table.footprint;
      throw new RelayError('text_index_full',
        `This server's text index is full (${Math.round(bytes / 2 ** 20)} MiB for ${this.table.size} records), so a text search would miss ` +
        `${this.left.size} record(s) it could not hold. Leave text out and filter with to, from, kind or replies_to, or ask the operator to move records out of this corpus.`,
        { param: 'text', maxBytes: this.limits.bytes, left: this.left.size });
    }
    return this.table.holding(words);
  }

  /** Reads every held record not read yet (all of them, on the first text query). */
  private catchUp(): void {
    this.loadShared();
    const held = this.heldIds();
    for (let i = 0; i < held.length; i++) this.readOne(held[i]!);
    this.share();
  }

  private readOne(n: number): void {
    if (this.table.has(n) || this.left.has(n)) return;
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
    if (!this.table.add(n, words)) this.left.add(n);
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

  private forget(n: number): void {
    this.table.forget(n);
    this.left.delete(n);
    this.damaged.delete(n);
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
    const take: number[] = [];
    const starts: number[] = [];
    const digest = new Uint8Array(DIGEST_PREFIX);
    for (let i = 0, start = 0; i < image.ids.length; start += image.lengths[i++]!) {
      const n = image.ids[i]!;
      if (this.table.has(n) || this.left.has(n)) continue;
      if (!this.digestInto(n, digest, 0, DIGEST_PREFIX) || !sameBytes(digest, image.digests, i * DIGEST_PREFIX)) continue;
      take.push(i);
      starts.push(start);
    }
    if (take.length === 0) return 'it holds no record held here as this store holds it';
    for (let k = Math.max(0, take.length - SPOT_CHECK); k < take.length; k++) {
      const n = image.ids[take[k]!]!;
      const words = this.wordsOf(n);
      const row = image.pool.subarray(starts[k]!, starts[k]! + image.lengths[take[k]!]!);
      const held = new Set(words ?? []);
      if (words === null || words.length !== row.length || row.some((w) => !held.has(image.words[w]!))) return `${this.shape.format(n)} does not hold the words it says`;
    }
    return this.table.adopt(image, take) ? null : 'it holds more than the text index may, or names a word twice';
  }

  /** Once enough records were read here: writes what this process holds for the others, after the answer. */
  private share(): void {
    if (!this.shared || this.sharing || this.closed) return;
    if (this.readSinceShared < Math.max(this.limits.shareAfter, Math.floor(this.table.size / 100))) return;
    this.readSinceShared = 0;
    const { file, tmpDir, log } = this.shared;
    this.sharing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => (this.closed ? undefined : writeTextImage(file, tmpDir, this.table.image((n, into, at) => this.digestInto(n, into, at, DIGEST_PREFIX)))))
      .catch((err: unknown) => log.debug(`could not write the text index ${file}: ${(err as Error).message}`))
      .finally(() => (this.sharing = null));
  }

}

function sameBytes(a: Uint8Array, b: Uint8Array, at: number): boolean {
  for (let i = 0; i < DIGEST_PREFIX; i++) if (a[i] !== b[at + i]) return false;
  return true;
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
