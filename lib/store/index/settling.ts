/**
 * Files seen named and not yet whole, looked at again on a short back-off
 * until they are. A file published with link() is whole the moment its
 * name appears, so this is for the writers that write in place (git pull,
 * a plain copy): their record may be read half-way, and fail its digest,
 * for a moment. After the last delay it is called damaged (the indexer
 * holds it so, and looks again on every reconcile).
 *
 * While a file is being retried here, no cursor may pass its id
 * (`lowest`): a wait that answered past it would never deliver it once it
 * is whole (spec §8a). The delays are unref'd timers, so a half-written
 * file never holds a process open, and `close` ends them at once.
 */

/** How long a newly seen file may stay half-written before it is called damaged: under 2 s in all. */
export const SETTLE_DELAYS_MS: readonly number[] = [0, 20, 50, 100, 200, 400, 800];

/** What one look at a file found: null when there is nothing more to do (indexed, gone, closed), else what stood in the way. */
export type Look = { error: unknown } | null;

export class Settling {
  /**
   * Files being retried, by id. A second look at the same file joins the
   * first instead of returning early, so the scan cannot finish while a
   * watcher event still holds one of its files.
   */
  private readonly pending = new Map<number, Promise<void>>();
  private readonly pauses = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  private closed = false;

  /** `onSettled`: a file stopped being retried, so what a cursor may pass has moved. */
  constructor(private readonly onSettled: () => void = () => {}) {}

  /** The retries of `n` under way, if any. */
  get(n: number): Promise<void> | undefined {
    return this.pending.get(n);
  }

  has(n: number): boolean {
    return this.pending.has(n);
  }

  /** Runs `retries` as the one settling of `n`; later looks at `n` join it until it ends. */
  start(n: number, retries: () => Promise<void>): Promise<void> {
    const run = retries().finally(() => {
      this.pending.delete(n);
      this.onSettled();
    });
    this.pending.set(n, run);
    return run;
  }

  /**
   * Looks again after each delay until a look answers null; what stood in
   * the way at the last look, or null once settled (or closed).
   */
  async retry(look: () => Look, delays: readonly number[], lastError: unknown = null): Promise<unknown> {
    for (const delay of delays) {
      if (delay) await this.pause(delay);
      const found = look();
      if (found === null) return null;
      lastError = found.error;
    }
    return this.closed ? null : lastError;
  }

  /** The lowest id still being retried that `isHeld` does not hold, or null: no cursor passes it. */
  lowest(isHeld: (n: number) => boolean): number | null {
    let lowest: number | null = null;
    for (const n of this.pending.keys()) if (!isHeld(n) && (lowest === null || n < lowest)) lowest = n;
    return lowest;
  }

  /** Resolves when no file is being retried. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending.values()]);
  }

  /** Ends every delay now; later retries give up at their next look. */
  close(): void {
    this.closed = true;
    for (const pause of this.pauses) {
      clearTimeout(pause.timer);
      pause.resolve();
    }
    this.pauses.clear();
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const pause = { timer: setTimeout(() => (this.pauses.delete(pause), resolve()), ms).unref(), resolve };
      this.pauses.add(pause);
    });
  }
}
