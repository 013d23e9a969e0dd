/**
 * At most `limit` record files open for reading at once in one process.
 *
 * A read opens the file and holds a buffer as large as the record until it is
 * done. Without a cap, a burst of reads opens one file each at once: an
 * outside review's 500 parallel requests of 100 get_relay calls each took a
 * hub to its fd limit (EMFILE, so legitimate appends failed to open the
 * corpus directory) and to 2.75 GB. Reads beyond the cap wait their turn, in
 * arrival order; none is refused.
 */
export class ReadGate {
  private active = 0;
  private readonly queue: (() => void)[] = [];

  constructor(readonly limit: number) {}

  /** Runs `work` once a place is free, and frees it when the work settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((resolve) => this.queue.push(resolve));
    try {
      return await work();
    } finally {
      // Hand the place straight to the next in line, so the count never dips
      // and a newcomer cannot slip in ahead of the queue.
      const next = this.queue.shift();
      if (next) next();
      else this.active--;
    }
  }

  /** Reads holding a place now. */
  get inFlight(): number {
    return this.active;
  }
}

/** Enough for any real workload of one process; small beside a default limit of 1,024 fds. */
export const DEFAULT_CONCURRENT_READS = 64;
