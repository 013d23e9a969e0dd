/**
 * The test kit's one refusal assertion, for every door: a function that
 * throws, a promise that rejects, an MCP tool result, an HTTP answer. Each
 * must be a refusal with exactly `code` (never judged by its text), and
 * comes back as the RelayError it stands for, so a test can look at its
 * sentence and details.
 */
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { ERROR_STATUS, RelayError, type ErrorCode } from '../../lib/errors.js';
import { ERROR_META_KEY } from '../../lib/mcp/result.js';

type Thrower = () => unknown;

/** `subject` throws (or, for a promise or an async function, rejects with) a RelayError of this code. */
export function refused(subject: Promise<unknown> | (() => Promise<unknown>), code: ErrorCode): Promise<RelayError>;
export function refused(subject: Thrower, code: ErrorCode): RelayError;
/** An MCP tool result that is a refusal of this code: isError, no structuredContent, the code in _meta. */
export function refused(subject: CallToolResult | Record<string, unknown>, code: ErrorCode): RelayError;
export function refused(subject: unknown, code: ErrorCode): RelayError | Promise<RelayError> {
  if (subject instanceof Promise) return subject.then(() => assert.fail(`expected a ${code} refusal, but it resolved`), (err: unknown) => asExpected(err, code));
  if (typeof subject === 'function') {
    let returned: unknown;
    try {
      returned = (subject as Thrower)();
    } catch (err) {
      return asExpected(err, code);
    }
    if (returned instanceof Promise) return refused(returned, code);
    assert.fail(`expected a ${code} refusal, but it returned ${String(returned)}`);
  }
  return toolRefusal(subject as CallToolResult, code);
}

/** An HTTP answer that is a refusal of this code: its status, and the JSON body {error, message, …details}. */
export async function refusedHttp(response: Response, code: ErrorCode): Promise<RelayError> {
  const text = await response.text();
  assert.equal(response.status, ERROR_STATUS[code], `HTTP ${response.status} for ${code}: ${text}`);
  const { error, message, ...details } = JSON.parse(text) as { error: string; message: string };
  assert.equal(error, code, message);
  assert.ok(typeof message === 'string' && message.length > 0, 'a refusal says why');
  return new RelayError(code, message, details);
}

function asExpected(err: unknown, code: ErrorCode): RelayError {
  assert.ok(err instanceof RelayError, `a RelayError, not ${String(err)}`);
  assert.equal(err.code, code, err.message);
  return err;
}

function toolRefusal(result: CallToolResult, code: ErrorCode): RelayError {
  assert.equal(result.isError, true, 'a refusal');
  assert.equal(result.structuredContent, undefined, 'refusals carry no structuredContent');
  const { code: got, ...details } = ((result._meta ?? {}) as Record<string, { code?: string }>)[ERROR_META_KEY] ?? {};
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  assert.equal(got, code, text);
  return new RelayError(code, text, details);
}
