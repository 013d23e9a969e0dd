/**
 * One tools/call from the client, forwarded to the hub.
 *
 * The call goes out as the client sent it (name and arguments; the hub's
 * own handler decides everything, exactly as for a client of its own), and
 * the hub's result comes back as it is: an answer, or a refusal the hub
 * gave as a tool result (id_held, read_only, too_many_waits, …). What the
 * bridge adds is the transport's part: signing (in the fetch), progress for
 * long waits, cancellation, and refusals with a stable code for everything
 * that went wrong between the two (HTTP 401/413/429, a hub that is down or
 * silent, a key that cannot be read).
 */
import { ProtocolError } from '@modelcontextprotocol/client';
import type { CallToolRequest, CallToolResult, ServerContext, ServerNotification } from '@modelcontextprotocol/server';
import { asRelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { refusal } from '../mcp/result.js';
import { toolNamed } from '../mcp/tools/index.js';
import { UNHELD_MAX_WAIT_MS, UNHELD_SLACK_MS } from '../store/store.js';
import { hubTakesKey, KEYED_TOOL, sendWithRetries, withIdempotencyKey } from './append-retry.js';
import type { HubClient } from './hub-client.js';
import type { BridgeSession } from './bridge-session.js';
import { ProgressRelay } from './progress-relay.js';
import { isInboxWait, type SessionRoster } from './session-roster.js';
import type { ToolList } from './tool-list.js';

/** A call the hub answers at once answers in milliseconds; well before a client's own 60 s, say the hub is silent. */
const CALL_TIMEOUT_MS = 30_000;
/** Beyond a held call's own window: the hub answers at the window's end, this covers the trip and a busy hub. */
const HOLD_SLACK_MS = 30_000;
/**
 * For a held call whose client sent no progress token: the hub is asked for
 * a window this much shorter than UNHELD_MAX_WAIT_MS, so that its answer,
 * the trip and the signing fit in the time the bridge may hold its client.
 */
export const UNHELD_TRIP_MS = 3_000;

/**
 * How long to give the hub for this call, and what to send it. With a
 * progress token from the client: the window the table of tools says the hub
 * may hold it, plus slack (progress keeps the client's clock from running
 * out). Without one: the bridge itself answers within UNHELD_MAX_WAIT_MS,
 * whatever the window asked, so the hub is asked for a window that ends
 * before that, and a hub silent past it is refused hub_timeout.
 */
/** How long to give the hub for a call whose client keeps it alive (a replica's forwarded append). */
export function callTimeoutMs(name: string, args: Record<string, unknown> | undefined): number {
  return callPlan(name, args, true).timeoutMs;
}

export function callPlan(name: string, args: Record<string, unknown> | undefined, progress: boolean): CallPlan {
  const door = toolNamed(name)?.door;
  if (!door?.holdsMs) return { timeoutMs: CALL_TIMEOUT_MS, args, firm: false };
  if (progress) return { timeoutMs: door.holdsMs(args, true) + HOLD_SLACK_MS, args, firm: false };
  return { timeoutMs: UNHELD_MAX_WAIT_MS - UNHELD_SLACK_MS / 2, args: door.within ? door.within(args, UNHELD_MAX_WAIT_MS - UNHELD_TRIP_MS) : args, firm: true };
}

export interface CallPlan {
  timeoutMs: number;
  args: Record<string, unknown> | undefined;
  /** The timeout counts from the call's arrival at the bridge (connecting to the hub included), not from each send. */
  firm: boolean;
}

export interface Forwarder {
  hub: HubClient;
  tools: ToolList;
  log: Logger;
  progressEveryMs?: number;
  /** The agent the bridge signs as: an answer's key is derived from it, as the hub derives it. */
  agent?: string;
  /** Adds who is here to the session's first inbox answer, where the hub did not (session-roster.ts). */
  roster?: SessionRoster;
  /** The session every call names to the hub (bridge-session.ts); absent, calls name none. */
  session?: BridgeSession;
}

export function forwardCall({ hub, tools, log, progressEveryMs, agent, roster, session }: Forwarder) {
  return async (request: CallToolRequest, ctx: ServerContext): Promise<CallToolResult> => {
    const signal = ctx.mcpReq.signal;
    const { name } = request.params;
    // Every append goes out with an idempotency key, so that a retry — ours
    // below, or the agent's — can never store it twice (append-retry.ts).
    const token = request.params._meta?.progressToken;
    const { timeoutMs, args, firm } = callPlan(name, withIdempotencyKey(name, request.params.arguments, agent), token !== undefined);
    const keyed = name === KEYED_TOOL && hubTakesKey(tools.hubList);
    const progress = new ProgressRelay(token, (n: ServerNotification) => ctx.mcpReq.notify(n), progressEveryMs);
    const started = Date.now();
    try {
      const send = async () => {
        const result = await hub.run({ signal }, timeoutMs, (client) =>
          client.callTool({ name, arguments: args, ...(session ? { _meta: session.meta() } : {}) }, {
            signal,
            timeout: firm ? Math.max(1, started + timeoutMs - Date.now()) : timeoutMs,
            // Asking for progress is also what makes the hub answer a wait as
            // an event stream, which keeps bytes moving on a long wait.
            onprogress: (p) => progress.relay(p),
          }),
        );
        tools.hubAnswered();
        return result as CallToolResult;
      };
      const result = await sendWithRetries(send, { name, keyed, signal, log });
      log.debug(`${name}: the hub answered in ${Date.now() - started} ms${result.isError ? ' (a refusal)' : ''}`);
      return roster && isInboxWait(name, args) ? await roster.complete(result) : result;
    } catch (err) {
      // What the hub gave this wait, if anything, is not going to the client: no later call of ours may prove it.
      if (session && name === 'wait_for_relay' && args?.after === undefined) session.lost();
      if (signal.aborted) {
        // The client cancelled: the hub's request is closed (which ends a
        // wait there), and the client reads no answer to this call.
        log.debug(`${name}: cancelled by the client after ${Date.now() - started} ms`);
        return refusal(err);
      }
      // The hub answered at the protocol level (no such tool, arguments its
      // schema refuses): the protocol's to report, as the hub did.
      if (err instanceof ProtocolError) throw err;
      const failure = asRelayError(err);
      log.info(`${name}: refused (${failure.code})`);
      return refusal(failure);
    } finally {
      progress.stop();
    }
  };
}
