/**
 * A store's lifecycle, in the manner of hypercore's ready-resource:
 * prepared → opening → open → closing → closed. Opening runs once (repeat
 * calls share its promise); closing runs once; a store never opens again
 * once it has begun to close, and every operation asked of it from then on
 * is refused with the same `store_closed`.
 */
import { RelayError } from '../errors.js';

export type StoreState = 'prepared' | 'opening' | 'open' | 'closing' | 'closed';

export class Lifecycle {
  private current: StoreState = 'prepared';
  private opening: Promise<void> | null = null;
  private closing: Promise<void> | null = null;
  private refused: Promise<void> | null = null;

  constructor(private readonly corpus: string) {}

  get state(): StoreState {
    return this.current;
  }

  /** close() has been called: nothing new may start. */
  get ending(): boolean {
    return this.current === 'closing' || this.current === 'closed';
  }

  /**
   * Runs `load` once; a load that fails runs `failed` (to let go of what it
   * started) and rejects with its error, or with the closed refusal where
   * close() came meanwhile.
   */
  open(load: () => Promise<void>, failed: () => void): Promise<void> {
    if (this.ending) return this.refusedOpen();
    if (this.opening) return this.opening;
    this.current = 'opening';
    this.opening = load().then(
      () => {
        if (this.current === 'opening') this.current = 'open';
      },
      (err: unknown) => {
        failed();
        throw this.current === 'opening' ? err : this.closedRefusal();
      },
    );
    return this.opening;
  }

  /** Runs `stopNow` at once and `shutDown` once an open in progress has settled, the first time; every call answers the same promise. */
  close(steps: { stopNow(): void; shutDown(): Promise<void> }): Promise<void> {
    return (this.closing ??= (async () => {
      this.current = 'closing';
      steps.stopNow();
      await this.opening?.catch(() => {});
      await steps.shutDown();
      this.current = 'closed';
    })());
  }

  /** Throws the closed refusal once close() has been called. */
  refuseIfClosed(): void {
    if (this.ending) throw this.closedRefusal();
  }

  closedRefusal(): RelayError {
    return new RelayError('store_closed', `The relay's store has closed (the server is shutting down), so this call was not ` +
      `carried out. Call again once the server is running; a wait can be repeated with the same after mark.`);
  }

  /** What open() answers once close() has been called (marked handled: nobody may be waiting). */
  private refusedOpen(): Promise<void> {
    if (!this.refused) {
      this.refused = Promise.reject(this.closedRefusal());
      this.refused.catch(() => {});
    }
    return this.refused;
  }
}
