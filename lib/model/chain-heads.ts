/**
 * The head of each id's naming chain in the record index (-1: named by
 * nothing held). Ids up to about the highest held one are where nearly
 * every parent:/ref: points, so they live in a typed array (4 bytes an id,
 * no Map entry of ~40); ids above it (cited before they exist) in a Map.
 */
export class ChainHeads {
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
