/**
 * Finding and checking a request's credential. No credential is not an
 * error here (reads need none; the door refuses what needs one); a
 * credential that is present but wrong is a 401 before anything runs.
 */
import type { IncomingMessage } from 'node:http';
import { RelayError } from '../errors.js';
import { checkCredential, parseAuthorization, type Credential } from '../auth/sign.js';
import { verifyCredential, type Verifier } from '../auth/verify.js';

const QUERY_FIELDS = ['agent', 'ts', 'sig'] as const;

/**
 * The credential a request carries: from the Authorization header, or (when
 * `allowQuery`, for browser EventSource) from agent/ts/sig query parameters.
 * Never both at once.
 */
export function credentialOf(req: IncomingMessage, url: URL, allowQuery: boolean): Credential | null {
  const header = req.headers.authorization;
  const inQuery = allowQuery && QUERY_FIELDS.some((k) => url.searchParams.has(k));
  if (header !== undefined && inQuery) {
    throw new RelayError('malformed_authorization',
      'The request carries a credential both in the Authorization header and in query parameters; ' +
      'send exactly one of them.', { reason: 'malformed_authorization' });
  }
  if (header !== undefined) return parseAuthorization(header);
  if (!inQuery) return null;
  for (const k of QUERY_FIELDS) {
    if (url.searchParams.getAll(k).length > 1) {
      throw new RelayError('malformed_authorization', `The query parameter ${k} is given more than once; send agent, ts and sig once each.`, { reason: 'malformed_authorization' });
    }
  }
  return checkCredential({ agent: url.searchParams.get('agent'), ts: url.searchParams.get('ts'), sig: url.searchParams.get('sig') });
}

/**
 * The verified agent, null when the request is unsigned, or a 401 RelayError
 * naming what is wrong. `spend`: whether a good signature is spent in the
 * one-time guard; only requests that buy something (an append, a wait, a
 * stream) spend theirs, so signed reads cannot fill the guard.
 */
export async function authenticate(req: IncomingMessage, url: URL, body: Uint8Array, verifier: Verifier, allowQuery = false, spend = true): Promise<string | null> {
  const credential = credentialOf(req, url, allowQuery);
  if (credential === null) return null;
  return verifyCredential(credential, req.method ?? 'GET', body, verifier, spend);
}
