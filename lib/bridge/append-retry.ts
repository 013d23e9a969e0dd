/**
 * The bridge's own retry of an append, made safe by an idempotency key
 * (SPEC §8b). Every append_relay it forwards carries a key — the client's,
 * or a fresh one the bridge adds — so when the connection breaks after the
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
import type { Tool } from '@modelcontextprotocol/client';
import type { RelayError } from '../errors.js';
import { appendRelay } from '../mcp/tools/append-relay.js';
import { ERROR_META_KEY } from '../mcp/result.js';

/** The tool the bridge keys and retries: the one the table marks as the append. */
export const KEYED_TOOL = appendRelay.name;
export const KEY_PARAM = 'idempotency_key';
/** Pauses before each retry: the hub a moment to come back, well inside a client's 60 s. */
export const RETRY_PAUSES_MS = [250, 1000];

/**
 * The call's arguments, with an idempotency key on an append that has none.
 * An answer (kind: answer, any case, with a parent:) gets the key the hub
 * gives an unkeyed answer from this agent (`<agent>/answer/<parent>`, SPEC
 * §8d), so answering the same question again through the bridge lands once,
 * as it does straight to the hub; anything else a fresh one.
 */
export function withIdempotencyKey(name: string, args: Record<string, unknown> | undefined, agent?: string): Record<string, unknown> | undefined {
  if (name !== KEYED_TOOL || (args && args[KEY_PARAM] !== undefined)) return args;
  const parent = agent === undefined ? null : answerParent(args?.bytes);
  return { ...args, [KEY_PARAM]: parent === null ? `bridge-${randomUUID()}` : `${agent}/answer/${parent}` };
}

/** The parent: of a record whose kind: is answer, read as the store reads headers (first of each wins, up to the first empty line); else null. */
function answerParent(bytes: unknown): string | null {
  if (typeof bytes !== 'string') return null;
  let kind: string | null = null;
  let parent: string | null = null;
  for (const line of bytes.split(/\r?\n/).slice(1)) {
    if (line === '') break;
    const m = /^([^:]+):\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    if (m[1] === 'kind' && kind === null) kind = m[2]!;
    if (m[1] === 'parent' && parent === null) parent = m[2]!;
  }
  return kind?.toLowerCase() === 'answer' && parent ? parent : null;
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
