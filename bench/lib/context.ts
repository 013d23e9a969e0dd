/** What every bench section gets: the run's settings, where to put temp files, and where to put figures. */
import type { Results } from './results.js';

export interface BenchContext {
  quick: boolean;
  /** Repetitions of every measurement (each ratio is taken within one). */
  reps: number;
  results: Results;
  /** A scratch directory on the same filesystem as the cached corpora (for hard links). */
  tmp: string;
  /** Corpus sizes the size-dependent figures run at. */
  sizes: { size: number; width: number }[];
  log(line: string): void;
  /** A measurement window: the full length, or the quick one. */
  window(fullMs: number, quickMs: number): number;
}

export interface Section {
  name: string;
  title: string;
  run(ctx: BenchContext): Promise<void>;
}

export const sizeLabel = (n: number) => (n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : n.toLocaleString("en-US"));
