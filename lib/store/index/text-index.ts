/**
 * The `text` filter (spec §8a filters, lib/model/filter.ts): which held
 * records hold given words. The record index keeps metadata only, and a
 * record's words are its file's to tell, so this index maps each folded word
 * to the ids of the records holding it (an inverted index), and a query
 * costs what its rarest word's list numbers, not what the store holds.
 *
 * It costs nothing until a text query comes: no word is read at start-up or
 * on an append, so the twenty servers of a swarm that never search pay for
 * none of it. The first text query reads every held record once; each query
 * after reads only the records held since (its own appends, other writers',
 * the lazy index's unverified ones alike: whatever the record index holds
 * and this has not read), so it is current from the one place that says
 * what is held. A record whose file cannot be read whole (damaged, gone)
 * holds no words and is tried again by the next query. A removed record's
 * ids stay in the lists; the record index says it is no longer held.
 *
 * It is the record index with the three queries that take a filter
 * (matches, matchingAfter, markBeforeNewest) answering `text` first and
 * asking the record index for the rest, so every door that filters (MCP,
 * REST, the stream, the CLI, catch-ups and live waits) gains it at once.
 */
import { searchableText, textWords, type RecordFilter } from '../../model/filter.js';
import { splitRecordFile } from '../../model/deposit.js';
import type { IdShape } from '../../model/ids.js';
import { decodeRecordText, parseRecord } from '../../model/record.js';
import { RecordIndex } from '../../model/record-index.js';

/** A held record's stored file (deposit header and record), read synchronously: throws when it cannot be read. */
export type ReadFileSync = (n: number) => Buffer;

/**
 * Records read between two turns of the event loop while the word index is
 * warmed: a few ms each. Synchronous reads in slices, not fs.promises: at
 * 100k records the promise reads took four times the CPU (10.2 s against
 * 2.3 s) for the same files.
 */
const WARM_SLICE = 256;

export class SearchableIndex extends RecordIndex {
  /** The ids of the records holding each word, ascending. */
  private readonly postings = new Map<string, number[]>();
  /** The records whose words are in (a set, not an array by id: one stray huge id must cost nothing). */
  private readonly read = new Set<number>();

  constructor(
    private readonly shape: IdShape,
    private readonly readFile: ReadFileSync,
    private readonly maxRecordBytes: number,
  ) {
    super(shape.format);
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
    const held = this.heldIds();
    for (let from = 0; from < held.length; from += WARM_SLICE) {
      const end = Math.min(held.length, from + WARM_SLICE);
      for (let i = from; i < end; i++) this.readOne(held[i]!);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  override matches(n: number, filter: RecordFilter | null): boolean {
    if (!filter?.text) return super.matches(n, filter);
    if (!super.matches(n, rest(filter))) return false;
    this.readOne(n);
    return filter.text.every((word) => holds(this.postings.get(word), n));
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

  /** Ids (ascending) of the records read so far that hold every word; the rarest word's list, kept where the others hold it too. */
  private holding(words: readonly string[]): number[] {
    this.catchUp();
    const lists = words.map((word) => this.postings.get(word) ?? []).sort((a, b) => a.length - b.length);
    const [rarest, ...more] = lists;
    return rarest!.filter((n) => more.every((list) => holds(list, n)));
  }

  /** Reads every held record not read yet (all of them, on the first text query). */
  private catchUp(): void {
    const held = this.heldIds();
    for (let i = 0; i < held.length; i++) if (!this.read.has(held[i]!)) this.readOne(held[i]!);
  }

  private readOne(n: number): void {
    if (this.read.has(n)) return;
    let words: string[];
    try {
      const record = splitRecordFile(this.readFile(n)).record;
      parseRecord(record, this.shape, this.maxRecordBytes); // what the record index holds as damaged holds no words either
      words = textWords(searchableText(decodeRecordText(record)));
    } catch {
      return; // damaged or gone: it holds no words, and the next query tries it again
    }
    this.read.add(n);
    for (const word of words) {
      const list = this.postings.get(word);
      if (!list) this.postings.set(word, [n]);
      else if (list[list.length - 1]! < n) list.push(n);
      else list.splice(firstAbove(list, n), 0, n); // read out of order (a lower id landed late): kept ascending
    }
  }
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

function holds(list: readonly number[] | undefined, n: number): boolean {
  if (!list) return false;
  const at = firstAbove(list, n) - 1;
  return at >= 0 && list[at] === n;
}
