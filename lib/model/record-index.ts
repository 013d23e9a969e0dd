/**
 * What one server process knows about the corpus, held in memory: which ids
 * are held, what each held record claims, who names whom. It answers exists,
 * list_relays and list_replies without touching the disk. Pure: the store
 * feeds it from its scan, its own appends and the watcher.
 *
 * KNOWN_MISSING is derived, never stored by hand: an id named in parent:/ref:
 * of a held record and not held itself.
 */
import type { Deposit, Provenance } from './deposit.js';
import type { RecordClaims } from './record.js';

export type IdState = 'PRESENT' | 'KNOWN_MISSING' | 'UNKNOWN';

export interface RecordMeta {
  id: string;
  kind: string | null;
  from: string | null;
  to: string | null;
  depositedBy: string;
  provenance: Provenance;
  depositedAt: string;
  digest: string;
}

export interface IndexEntry {
  n: number;
  /** null when the file is held but damaged: its claims cannot be trusted. */
  meta: RecordMeta | null;
  named: number[];
}

export class RecordIndex {
  private readonly held = new Map<number, IndexEntry>();
  /** Held ids in ascending order; appends almost always land at the end. */
  private readonly order: number[] = [];
  /** id → held records that name it. */
  private readonly namedBy = new Map<number, Set<number>>();
  /**
   * The KNOWN_MISSING ids (named, not held), kept as records come and go, so
   * that listing them costs what they number rather than every id ever named
   * (a list_relays poll on a 100k-record store walked ~55k names).
   */
  private readonly missing = new Set<number>();
  /** The highest id ever held or issued, even if its file has since vanished. */
  private highWater = 0;

  get size(): number {
    return this.held.size;
  }

  get highest(): number {
    return this.highWater;
  }

  /** Raises the high-water mark (from the issued log, or an id seen taken). */
  noteIssued(n: number): void {
    if (n > this.highWater) this.highWater = n;
  }

  has(n: number): boolean {
    return this.held.has(n);
  }

  get(n: number): IndexEntry | undefined {
    return this.held.get(n);
  }

  /** Adds a held record. Returns false when it was already held (nothing changes). */
  add(n: number, deposit: Deposit | null, claims: RecordClaims | null, format: (n: number) => string): boolean {
    if (this.held.has(n)) return false;
    const named = claims?.named ?? [];
    const meta: RecordMeta | null =
      deposit && claims
        ? { id: format(n), kind: claims.kind, from: claims.from, to: claims.to, depositedBy: deposit.depositedBy, provenance: deposit.provenance, depositedAt: deposit.depositedAt, digest: deposit.digest }
        : null;
    this.held.set(n, { n, meta, named });
    this.missing.delete(n);
    insertSorted(this.order, n);
    for (const m of named) {
      let set = this.namedBy.get(m);
      if (!set) this.namedBy.set(m, (set = new Set()));
      set.add(n);
      if (!this.held.has(m)) this.missing.add(m);
    }
    this.noteIssued(n);
    return true;
  }

  /** Drops a record whose file is gone. The high-water mark stays: ids are never reused. */
  remove(n: number): boolean {
    const entry = this.held.get(n);
    if (!entry) return false;
    this.held.delete(n);
    const at = bisect(this.order, n);
    if (this.order[at] === n) this.order.splice(at, 1);
    for (const m of entry.named) {
      const set = this.namedBy.get(m);
      set?.delete(n);
      if (set?.size === 0) {
        this.namedBy.delete(m);
        this.missing.delete(m);
      }
    }
    if (this.namedBy.has(n)) this.missing.add(n);
    return true;
  }

  state(n: number | null): IdState {
    if (n === null) return 'UNKNOWN';
    if (this.held.has(n)) return 'PRESENT';
    return this.missing.has(n) ? 'KNOWN_MISSING' : 'UNKNOWN';
  }

  isKnownMissing(n: number): boolean {
    return this.missing.has(n);
  }

  /** Held ids greater than `after`, ascending. */
  presentAfter(after: number): number[] {
    return this.order.slice(bisect(this.order, after + 1));
  }

  /** KNOWN_MISSING ids greater than `after`, ascending. */
  knownMissingAfter(after: number): number[] {
    const out: number[] = [];
    for (const m of this.missing) if (m > after) out.push(m);
    return out.sort((a, b) => a - b);
  }

  /** Held records naming `n` in parent:/ref:, ascending. */
  repliesTo(n: number): number[] {
    const set = this.namedBy.get(n);
    return set ? [...set].sort((a, b) => a - b) : [];
  }

  heldIds(): IterableIterator<number> {
    return this.held.keys();
  }
}

/** First index whose value is >= n. */
function bisect(sorted: number[], n: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < n) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insertSorted(sorted: number[], n: number): void {
  if (sorted.length === 0 || sorted[sorted.length - 1]! < n) sorted.push(n);
  else sorted.splice(bisect(sorted, n), 0, n);
}
