/**
 * PE-HMAC request signing (spec §10):
 *
 *   Authorization: PE-HMAC agent=<name>, ts=<unix seconds>, sig=<hex>
 *   sig = hex(HMAC-SHA256(key, METHOD + "\n" + ts + "\n" + sha256hex(raw body)))
 *
 * The path is not signed; `ts` is hashed exactly as sent. Pure functions
 * only: key lookup and the one-time guard are in verify.ts.
 */
import { createHash, createHmac } from 'node:crypto';
import { RelayError } from '../errors.js';
import { isAgentName } from './keys.js';

export const AUTH_SCHEME = 'PE-HMAC';
export const MAX_SKEW_S = 60;

export interface Credential {
  agent: string;
  /** Decimal unix seconds, exactly as sent (it is hashed as text). */
  ts: string;
  sig: string;
}

export function sha256Hex(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

export function computeSignature(key: Uint8Array, method: string, ts: string, body: Uint8Array): string {
  return createHmac('sha256', key).update(`${method}\n${ts}\n${sha256Hex(body)}`).digest('hex');
}

export function formatAuthorization(credential: Credential): string {
  return `${AUTH_SCHEME} agent=${credential.agent}, ts=${credential.ts}, sig=${credential.sig}`;
}

/** A whole Authorization header value for one request, signed now (or at `nowMs`). */
export function authorizationFor(agent: string, key: Uint8Array, method: string, body: Uint8Array, nowMs = Date.now()): string {
  const ts = String(Math.floor(nowMs / 1000));
  return formatAuthorization({ agent, ts, sig: computeSignature(key, method, ts, body) });
}

const HOW = `Send \`Authorization: ${AUTH_SCHEME} agent=<name>, ts=<unix seconds>, sig=<64 lowercase hex>\` (\`p-e-relay sign\` prints one).`;

function malformed(why: string): RelayError {
  return new RelayError('malformed_authorization', `The credential cannot be read: ${why}. ${HOW}`, { reason: 'malformed_authorization' });
}

/** Checks the three fields' shapes; the same rules hold in a header and in query parameters. */
export function checkCredential(fields: { agent?: string | null; ts?: string | null; sig?: string | null }): Credential {
  const { agent, ts, sig } = fields;
  if (agent == null || ts == null || sig == null) {
    const missing = (['agent', 'ts', 'sig'] as const).filter((k) => fields[k] == null);
    throw malformed(`${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing`);
  }
  if (!isAgentName(agent)) throw malformed('agent must be 1–64 letters, digits, ".", "_" or "-", starting with a letter or digit');
  if (!/^[0-9]{1,12}$/.test(ts)) throw malformed('ts must be unix seconds in decimal digits');
  if (!/^[0-9a-f]{64}$/.test(sig)) throw malformed('sig must be exactly 64 lowercase hex characters');
  return { agent, ts, sig };
}

/** Parses `PE-HMAC agent=…, ts=…, sig=…` (scheme case-insensitive, spaces around commas free). */
export function parseAuthorization(header: string): Credential {
  const m = /^\s*(\S+)\s+(.*)$/s.exec(header);
  if (!m || m[1]!.toUpperCase() !== AUTH_SCHEME) throw malformed(`the scheme must be ${AUTH_SCHEME}`);
  const fields: Record<string, string> = {};
  for (const part of m[2]!.split(',')) {
    const kv = /^\s*([a-z]+)=([^\s,]*)\s*$/.exec(part);
    if (!kv) throw malformed('parameters must be name=value pairs separated by commas');
    const [, name, value] = kv;
    if (name !== 'agent' && name !== 'ts' && name !== 'sig') throw malformed(`"${name}" is not one of agent, ts, sig`);
    if (name in fields) throw malformed(`${name} is given twice`);
    fields[name] = value!;
  }
  return checkCredential(fields);
}

/** Seconds between a credential's ts and now, or throws stale_timestamp outside ±60 s. */
export function checkFreshness(ts: string, nowMs: number): void {
  const nowS = Math.floor(nowMs / 1000);
  const skew = Number(ts) - nowS;
  if (Math.abs(skew) > MAX_SKEW_S) {
    const side = skew < 0 ? `${-skew} s behind` : `${skew} s ahead of`;
    throw new RelayError(
      'stale_timestamp',
      `The credential's ts is ${side} this hub's clock (hub time ${nowS}); it must be within ${MAX_SKEW_S} s. Sign again with the current unix time, and check your clock if this repeats.`,
      { reason: 'stale_timestamp', serverTime: nowS },
    );
  }
}
