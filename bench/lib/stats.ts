/**
 * Small statistics for a noisy machine: every figure is a handful of
 * repetitions, reported as the median with its min–max, and every ratio is
 * taken within one repetition (figure and ceiling measured back to back), so
 * a burst of load from something else on the machine moves both.
 */

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spread(values: readonly number[]): Spread {
  if (values.length === 0) return { median: NaN, min: NaN, max: NaN, n: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  return { median: quantile(sorted, 0.5), min: sorted[0]!, max: sorted[sorted.length - 1]!, n: sorted.length };
}

/** Linear-interpolated quantile of an ascending array. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

export function percentiles(samples: readonly number[], qs: readonly number[]): number[] {
  const sorted = [...samples].sort((a, b) => a - b);
  return qs.map((q) => quantile(sorted, q));
}

/** Element-wise ratio of paired repetitions. */
export function ratios(values: readonly number[], base: readonly number[]): number[] {
  return values.map((v, i) => v / base[i]!);
}

/** Milliseconds since an arbitrary origin, from the monotonic clock every process on the machine shares. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Calls `op` back to back until `ms` have passed; returns completed operations per second. */
export async function rate(ms: number, op: () => Promise<unknown>): Promise<number> {
  const start = nowMs();
  let n = 0;
  while (nowMs() - start < ms) {
    await op();
    n++;
  }
  return (n * 1000) / (nowMs() - start);
}

/** Runs `concurrency` loops of `op` for `ms`; returns completed operations per second in all. */
export async function concurrentRate(ms: number, concurrency: number, op: (lane: number) => Promise<unknown>): Promise<number> {
  const start = nowMs();
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      while (nowMs() - start < ms) {
        await op(lane);
        n++;
      }
    }),
  );
  return (n * 1000) / (nowMs() - start);
}
