/**
 * Writing answers at the HTTP edge. Every refusal is JSON
 * `{"error": CODE, "message": SENTENCE, …details}` with the status from
 * ERROR_STATUS, plus the header the status calls for: WWW-Authenticate on
 * 401, Retry-After on 429, Allow on 405.
 */
import type { ServerResponse } from 'node:http';
import { asRelayError, type RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { AUTH_SCHEME } from '../auth/sign.js';

export const JSON_TYPE = 'application/json; charset=utf-8';
export const TEXT_TYPE = 'text/plain; charset=utf-8';

export interface Refusals {
  refused(code: string): void;
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string | number> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { ...headers, 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string | number> = {}): void {
  const body = text.endsWith('\n') ? text : `${text}\n`;
  res.writeHead(status, { ...headers, 'Content-Type': TEXT_TYPE, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** The headers a refusal's status calls for. */
export function refusalHeaders(e: RelayError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (e.status === 401) headers['WWW-Authenticate'] = `${AUTH_SCHEME} realm="p-e-relay", error="${e.code}"`;
  if (e.status === 429 && typeof e.details.retryAfterS === 'number') headers['Retry-After'] = String(e.details.retryAfterS);
  if (e.status === 405 && typeof e.details.allow === 'string') headers.Allow = e.details.allow;
  // The rest of an oversized body is still on the wire: do not keep the connection for another request.
  if (e.status === 413) headers.Connection = 'close';
  return headers;
}

/**
 * The one refusal writer at the HTTP edge: answers a refusal (or anything
 * thrown) as JSON, counts it, and logs the cause of an internal error, never
 * a credential. `headers` are added to the ones its status calls for.
 */
export function sendError(res: ServerResponse, err: unknown, log: Logger, metrics?: Refusals, headers: Record<string, string> = {}): void {
  const e = asRelayError(err);
  if (e.code === 'internal' && err !== e) log.error(`internal error: ${(err as Error)?.stack ?? String(err)}`);
  metrics?.refused(e.code);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, e.status, e.toJSON(), { ...headers, ...refusalHeaders(e) });
}

/** Whether the client asked for JSON rather than text. */
export function wantsJson(accept: string | undefined): boolean {
  return typeof accept === 'string' && /application\/json/i.test(accept);
}
