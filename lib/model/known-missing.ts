/**
 * KNOWN_MISSING, derived and never stored by hand (spec §3): an id that a
 * held, checked record names in parent: or ref: and that is not held itself.
 * The record index (record-index.ts) tells this what happens to its checked
 * rows; this keeps who names whom (naming-chains.ts, through the rows'
 * named entries) and the set of missing ids, so that listing them costs
 * what they number rather than every id ever named.
 *
 * Unverified rows stay out: an unchecked claim makes no id KNOWN_MISSING
 * (the index keeps their chains apart, and checks a row before it counts).
 */
import type { IndexColumns } from './index-columns.js';
import { NamingChains } from './naming-chains.js';

export class KnownMissing {
  private readonly chains = new NamingChains();
  private readonly missing = new Set<number>();

  /** `n` is held now (checked or not): it is not missing, whoever names it. */
  held(n: number): void {
    this.missing.delete(n);
  }

  /** Checked row `slot` for `n` was written: each id it names is linked to it, and missing unless `has` it. */
  filled(c: IndexColumns, slot: number, n: number, has: (m: number) => boolean): void {
    this.held(n);
    const start = c.namedStart[slot]!;
    for (let i = 0; i < c.namedCount[slot]!; i++) {
      const m = c.named[start + i]!;
      this.chains.link(c, start + i, m, n);
      if (!has(m)) this.missing.add(m);
    }
  }

  /** Checked row `slot` is removed or replaced: an id no held record names any more is not missing either. */
  dropped(c: IndexColumns, slot: number): void {
    const start = c.namedStart[slot]!;
    for (let i = 0; i < c.namedCount[slot]!; i++) if (this.chains.unlink(c, start + i)) this.missing.delete(c.named[start + i]!);
  }

  /** Held record `n` is gone from disk: missing, if a held record names it. */
  removed(n: number): void {
    if (this.chains.names(n)) this.missing.add(n);
  }

  /** Every row of `c` was loaded at once (a snapshot): the chains are threaded directly, and each named id asked once whether it is held. */
  loaded(c: IndexColumns, has: (m: number) => boolean): void {
    this.chains.threadAll(c);
    for (const m of this.chains.namedIds()) if (!has(m)) this.missing.add(m);
  }

  has(n: number): boolean {
    return this.missing.has(n);
  }

  /** The missing ids above `after`, ascending. */
  after(after: number): number[] {
    const out: number[] = [];
    for (const m of this.missing) if (m > after) out.push(m);
    return out.sort((a, b) => a - b);
  }

  /** Whether some missing id is `n` or above. */
  anyFrom(n: number): boolean {
    for (const m of this.missing) if (m >= n) return true;
    return false;
  }

  /** The held, checked records naming `n`, in no order. */
  namersOf(c: IndexColumns, n: number): number[] {
    return this.chains.namersOf(c, n);
  }

  /** Chain heads kept in a typed array up to `n` (record-index.ts coverHeads). */
  cover(n: number): void {
    this.chains.cover(n);
  }
}
