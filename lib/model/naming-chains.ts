/**
 * Who names whom, in the record index: for each id, a chain through the
 * named entries of index-columns.ts (named[e] is the id, namer[e] the record
 * naming it, nextNaming[e] the next entry naming the same id), its head kept
 * in ChainHeads. The index keeps two: one for checked records, which makes
 * ids KNOWN_MISSING, and one for unverified records, which only says whom
 * to check first.
 */
import { ChainHeads } from './chain-heads.js';
import type { IndexColumns } from './index-columns.js';

export class NamingChains {
  private readonly heads = new ChainHeads();

  /** Entry `e` says: record `by` names `m`. */
  link(c: IndexColumns, e: number, m: number, by: number): void {
    c.named[e] = m;
    c.namer[e] = by;
    c.nextNaming[e] = this.heads.get(m);
    this.heads.set(m, e);
  }

  /** Takes entry `e` out of its chain; true when nothing names its id any more. */
  unlink(c: IndexColumns, e: number): boolean {
    const m = c.named[e]!;
    let previous = -1;
    let at = this.heads.get(m);
    while (at !== -1 && at !== e) {
      previous = at;
      at = c.nextNaming[at]!;
    }
    if (at === -1) return false;
    const next = c.nextNaming[e]!;
    if (previous !== -1) c.nextNaming[previous] = next;
    else if (next !== -1) this.heads.set(m, next);
    else {
      this.heads.delete(m);
      return true;
    }
    return false;
  }

  /** The records naming `n`, in no order. */
  namersOf(c: IndexColumns, n: number): number[] {
    const out: number[] = [];
    for (let e = this.heads.get(n); e !== -1; e = c.nextNaming[e]!) out.push(c.namer[e]!);
    return out;
  }

  /** Whether some record names `m`. */
  names(m: number): boolean {
    return this.heads.has(m);
  }

  /** Threads every named entry of freshly loaded columns (slot i at position i), in one pass. */
  threadAll(c: IndexColumns): void {
    for (let k = 0, i = 0; i < c.count; i++) {
      for (let left = c.namedCount[i]!; left > 0; left--, k++) {
        c.namer[k] = c.ids[i]!;
        c.nextNaming[k] = this.heads.get(c.named[k]!);
        this.heads.set(c.named[k]!, k);
      }
    }
  }

  /** Heads kept dense up to `n` (ChainHeads.cover). */
  cover(n: number): void {
    this.heads.cover(n);
  }

  /** Every id some record names. */
  namedIds(): IterableIterator<number> {
    return this.heads.keys();
  }
}
