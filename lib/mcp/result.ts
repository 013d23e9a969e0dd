/**
 * Tool results. A refusal is a normal result with `isError: true` and a
 * sentence saying what to do, never a thrown JSON-RPC error, so the agent
 * reads it and can act. Refusals carry no structuredContent (clients check it
 * against the output schema); the stable code rides in `_meta`, and leads
 * the text too: many hosts show a model the text alone, and the tool
 * descriptions say what to do by code.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { asRelayError } from '../errors.js';

export const ERROR_META_KEY = 'p-e-relay/error';

export function answer(text: string, structured?: Record<string, unknown>): CallToolResult {
  const result: CallToolResult = { content: [{ type: 'text', text }] };
  if (structured) result.structuredContent = withoutNulls(structured);
  return result;
}

/**
 * The structured answer with every null-valued property left out, at any
 * depth. The store says "no such header" with null; the output schemas say
 * it by leaving the property optional, since a `type` array such as
 * ["string","null"] is refused by single-type dialects. The text answer is
 * unchanged.
 */
export function withoutNulls<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutNulls) as T;
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) if (v !== null) out[key] = withoutNulls(v);
  return out as T;
}

export function refusal(err: unknown): CallToolResult {
  const e = asRelayError(err);
  return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.message}` }], _meta: { [ERROR_META_KEY]: { code: e.code, ...e.details } } };
}
