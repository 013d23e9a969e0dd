/**
 * The bridge's own retry of an append, made safe by an idempotency key
 * (spec §8b). Every append_relay it forwards carries a key — the client's,
 * the key of its bytes, or for an answer the one the hub derives — so
 * when the connection breaks after the
 * request went out (the answer was lost, the hub restarted), sending the
 * same call again answers the record the first try stored (`replayed: true`)
 * instead of storing a second one.
 *
 * The same holds for a hub whose corpus is on a network mount that lost
 * its connection mid-append: it refuses store_unreachable, and the same
 * keyed call sent again a moment later answers the record once.
 *
 * The bridge retries only when the hub's own tool list takes the key: an
 * older hub would drop an argument it does not know, and a blind retry there
 * could store the record twice.
 */
import { randomUUID } from 'node:crypto';
import { ProtocolError, type Tool } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { asRelayError, type RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { appendRelay } from '../mcp/tools/append-relay.js';
import { isAnswer } from '../model/answer-key.js';
import { idShape, MAX_ID_WIDTH, MIN_ID_WIDTH } from '../model/ids.js';
import { bytesKey } from '../mcp/tools/named-key.js';
import { ERROR_META_KEY } from '../mcp/result.js';

/** The tool the bridge keys and retries: the one the table marks as the append. */
export const KEYED_TOOL = appendRelay.name;
export const KEY_PARAM = 'idempotency_key';
/** Pauses before each retry: the hub a moment to come back, well inside a client's 60 s. */
export const RETRY_PAUSES_MS = [250, 1000];

/**
 * The call's arguments, with an idempotency key on an append that has none.
 * An answer (kind: answer, any case, with a parent: id) gets none: the hub
 * keys an unkeyed answer from the signing agent by its parsed question id
 * (lib/model/answer-key.ts), so the same answer through the bridge and
 * straight to the hub lands once, and an answer the hub takes is never
 * refused here for a key made of its raw parent: text. Its retry is as safe
 * as a keyed one: the hub derives the same key each time. Anything else
 * gets the key of its bytes, as the hub keys a signed append (named-key.ts),
 * so the agent's own resend of the same record lands once too; arguments
 * with no bytes a fresh one.
 */
export function withIdempotencyKey(name: string, args: Record<string, unknown> | undefined, agent?: string): Record<string, unknown> | undefined {
  if (name !== KEYED_TOOL || (args && args[KEY_PARAM] !== undefined)) return args;
  const bytes = typeof args?.bytes === 'string' ? args.bytes : null;
  if (agent !== undefined && bytes !== null && answersAnyShape(bytes)) return args;
  return { ...args, [KEY_PARAM]: bytes === null ? `bridge-${randomUUID()}` : bytesKey(bytes) };
}

/** The bridge does not know the hub's id width: an answer to an id of any width the hub may have. */
const SHAPES = Array.from({ length: MAX_ID_WIDTH - MIN_ID_WIDTH + 1 }, (_, i) => idShape(MIN_ID_WIDTH + i));
function answersAnyShape(text: string): boolean {
  const bytes = Buffer.from(text, 'utf8');
  return SHAPES.some((shape) => isAnswer(bytes, shape));
}

/** Whether the hub's listed append_relay takes an idempotency key. */
export function hubTakesKey(tools: readonly Tool[] | null): boolean {
  const append = tools?.find((tool) => tool.name === KEYED_TOOL);
  return Boolean(append && KEY_PARAM in ((append.inputSchema.properties as Record<string, unknown> | undefined) ?? {}));
}

/** A failure after which sending the same keyed call again is right: the hub never answered it. */
export function worthRetrying(failure: RelayError): boolean {
  // hub_timeout is not retried: another 30 s would outlast the client's own timeout.
  // store_unreachable arrives here when the hub's door itself met the lost mount (its signature guard), before any tool ran.
  return failure.code === 'hub_unreachable' || failure.code === 'store_unreachable';
}

/**
 * Pauses before each retry of an append the hub refused store_unreachable
 * (its corpus is on a network mount that lost its connection): longer than
 * RETRY_PAUSES_MS, since a mount takes a moment to reconnect; 7.25 s in
 * all, well inside a client's 60 s.
 */
export const LOST_MOUNT_PAUSES_MS = [250, 1000, 2000, 4000];

/** Whether the hub's answer is a refusal that the same keyed call, sent again in a moment, may not meet. */
export function hubSaysRetry(result: { isError?: boolean; _meta?: Record<string, unknown> }): boolean {
  const refusal = result.isError ? (result._meta?.[ERROR_META_KEY] as { code?: string } | undefined) : undefined;
  return refusal?.code === 'store_unreachable';
}

export interface RetryPlan {
  /** The tool called, for the log. */
  name: string;
  /** Only a keyed append (hubTakesKey) is ever sent twice. */
  keyed: boolean;
  /** The caller gave up: no retry after that. */
  signal?: AbortSignal;
  log: Logger;
}

/**
 * Sends one call to the hub, and a keyed append again, with the same key,
 * after the failures that say the hub never answered it (worthRetrying:
 * RETRY_PAUSES_MS) or that its corpus's mount is back in a moment
 * (hubSaysRetry: LOST_MOUNT_PAUSES_MS). The bridge and a replica's
 * forwarded appends (lib/replica/) go through this one loop.
 */
export async function sendWithRetries(send: () => Promise<CallToolResult>, { name, keyed, signal, log }: RetryPlan): Promise<CallToolResult> {
  const retries = keyed ? RETRY_PAUSES_MS : [];
  let mountRetries = 0;
  for (let attempt = 0; ; attempt++) {
    let result: CallToolResult;
    try {
      result = await send();
    } catch (err) {
      if (signal?.aborted || err instanceof ProtocolError || attempt >= retries.length || !worthRetrying(asRelayError(err))) throw err;
      log.info(`${name}: the hub did not answer (${asRelayError(err).code}); sending it again with the same idempotency key`);
      await pause(retries[attempt]!);
      continue;
    }
    if (!keyed || !hubSaysRetry(result) || mountRetries >= LOST_MOUNT_PAUSES_MS.length || signal?.aborted) return result;
    log.info(`${name}: the hub's corpus stopped answering (store_unreachable); sending it again with the same idempotency key`);
    await pause(LOST_MOUNT_PAUSES_MS[mountRetries++]!);
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
