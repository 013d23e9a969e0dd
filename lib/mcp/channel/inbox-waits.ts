/**
 * Which named agents have an inbox wait open in this process: a
 * wait_for_relay with no after and no filter, the call the named loop makes.
 * While one is open it answers whatever lands for the agent, so the channel
 * push (channel-push.ts) holds back rather than say the same record twice.
 * Kept per store, since a test process may hold several.
 */
import type { RelayStore } from '../../store/store.js';

const open = new WeakMap<RelayStore, Map<string, number>>();

/** Marks an inbox wait open until the returned function is called (once). */
export function openInboxWait(store: RelayStore, agent: string): () => void {
  const counts = open.get(store) ?? new Map<string, number>();
  open.set(store, counts);
  counts.set(agent, (counts.get(agent) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const left = (counts.get(agent) ?? 1) - 1;
    if (left > 0) counts.set(agent, left);
    else counts.delete(agent);
  };
}

export function inboxWaitOpen(store: RelayStore, agent: string): boolean {
  return (open.get(store)?.get(agent) ?? 0) > 0;
}
