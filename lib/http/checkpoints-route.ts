/** GET /checkpoints: the verified frontier (lib/store/checkpoint-frontier.ts), for the web view and scripts. */
import type { RelayStore } from '../store/store.js';
import { CheckpointFrontier } from '../store/checkpoint-frontier.js';
import type { HubRequest } from './context.js';
import { sendJson } from './respond.js';

/** One walker per store: it remembers how far it has checked, so each request checks only what landed since. */
const frontiers = new WeakMap<RelayStore, CheckpointFrontier>();

export async function checkpointFrontier({ res, ctx }: HubRequest): Promise<void> {
  let frontier = frontiers.get(ctx.store);
  if (!frontier) frontiers.set(ctx.store, (frontier = new CheckpointFrontier(ctx.store)));
  sendJson(res, 200, await frontier.now());
}
