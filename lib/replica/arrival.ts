/**
 * "Has this record reached me yet?" A replica answers a forwarded append
 * once the primary has stored it and the mirror has brought it here, so the
 * agent's next read on the replica (get_relay of the id it was just given)
 * finds it. One subscription, caught up from the index and then live, so a
 * record that arrived before the question is found as surely as one that
 * arrives after.
 */
import type { RelayStore, Subscription } from '../store/store.js';

/** Resolves true once `store` holds record `id` (at once if it does already), false after `ms` or if the store closes. */
export function arrival(store: RelayStore, id: string, ms: number): Promise<boolean> {
  const n = store.shape.parseRecordId(id);
  if (n === null) return Promise.resolve(false);
  return new Promise((resolve) => {
    let subscription: Subscription | null = null;
    let settled = false;
    const settle = (arrived: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      subscription?.close();
      resolve(arrived);
    };
    const timer = setTimeout(() => settle(false), ms);
    try {
      subscription = store.subscribe({ after: n - 1, match: (_meta, m) => m === n, onClosed: () => settle(false) }, () => settle(true));
    } catch {
      return settle(false); // the store is closing: nothing more arrives
    }
    subscription.caughtUp.catch(() => settle(false));
    if (settled) subscription.close();
  });
}
