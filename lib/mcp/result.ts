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
  if (structured) result.structuredContent = structured;
  return result;
}

export function refusal(err: unknown): CallToolResult {
  const e = asRelayError(err);
  return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.message}` }], _meta: { [ERROR_META_KEY]: { code: e.code, ...e.details } } };
}
