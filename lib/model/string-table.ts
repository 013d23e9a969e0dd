/**
 * Interned strings for the record index: a swarm's records repeat a handful
 * of names (kind, from, to, deposited-by) a million times, so each distinct
 * string is held once and records hold its number. 0 stands for null.
 * Strings are never dropped: a name that stops being used costs its bytes
 * once, which is what a corpus's vocabulary costs anyway.
 */
export class StringTable {
  private readonly numbers = new Map<string, number>();
  private readonly texts: (string | null)[] = [null];

  get size(): number {
    return this.texts.length;
  }

  /** The number of `text` (0 for null), adding it when new. */
  intern(text: string | null): number {
    if (text === null) return 0;
    let n = this.numbers.get(text);
    if (n === undefined) {
      n = this.texts.length;
      this.texts.push(text);
      this.numbers.set(text, n);
    }
    return n;
  }

  at(n: number): string | null {
    return this.texts[n] ?? null;
  }

  /** Every string after null, in number order (for a snapshot). */
  toArray(): string[] {
    return this.texts.slice(1) as string[];
  }

  static fromArray(texts: readonly string[]): StringTable {
    const table = new StringTable();
    for (const text of texts) {
      if (typeof text !== 'string' || table.numbers.has(text)) throw new Error('a string table holds each string once');
      table.intern(text);
    }
    return table;
  }
}
