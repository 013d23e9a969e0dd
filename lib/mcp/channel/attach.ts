/**
 * Starts the channel push (channel-push.ts) on one stdio session, when it
 * should run: the server is named, and the host reads channel notifications.
 *
 * How a server knows the host reads them. Claude Code drops a channel
 * notification without a word unless the session was started with the
 * server loaded as a channel (`--channels` / `--dangerously-load-development-
 * channels server:<name>`), and it acknowledges none; its documentation
 * describes no client capability that says so. A push counts as a delivery
 * (a later wait does not return it), so pushing into a host that drops it
 * would lose the record for that agent. Push therefore runs only when told:
 * `serve --agent NAME --channel` (or P_E_RELAY_CHANNEL=1), or a client whose
 * initialize capabilities declare `experimental["claude/channel"]` (a host
 * that says it reads them). Otherwise nothing is pushed and waits and hooks
 * deliver everything, as without push.
 *
 * It starts after `notifications/initialized` (the client is ready to hear
 * notifications) and only on a 2025-era session (initialize); the 2026-era
 * protocol sends nothing outside a request's answer.
 */
import type { McpServer } from '@modelcontextprotocol/server';
import type { Logger } from '../../log.js';
import type { RelayStore } from '../../store/store.js';
import { CHANNEL_METHOD } from './channel-notification.js';
import { ChannelPush } from './channel-push.js';
import { inboxWaitOpen } from './inbox-waits.js';

export interface PushSettings {
  store: RelayStore;
  agent: string;
  /** The operator said the host reads channels (serve --channel). */
  forced: boolean;
  log: Logger;
}

/** Wires push into `server`'s session; returns a function that stops it (the session ended). */
export function attachChannelPush(server: McpServer, settings: PushSettings): () => void {
  const { store, agent, forced, log } = settings;
  let push: ChannelPush | null = null;
  const inner = server.server;
  const before = inner.oninitialized;
  inner.oninitialized = () => {
    before?.();
    const declared = inner.getClientCapabilities()?.experimental?.['claude/channel'] !== undefined;
    if (!forced && !declared) return;
    push = new ChannelPush({
      store,
      agent,
      log,
      waiting: () => inboxWaitOpen(store, agent),
      send: (params) => inner.notification({ method: CHANNEL_METHOD, params: { ...params } }),
    });
    log.info(`channel push on for ${agent} (${forced ? '--channel' : 'the client declared claude/channel'})`);
    push.start().catch((err: unknown) => log.warn(`channel push for ${agent} did not start: ${(err as Error).message}; waits still deliver`));
  };
  return () => push?.close();
}
