/**
 * What went wrong between the bridge and the hub, as refusals the agent
 * can act on. The hub's own refusals arrive as HTTP errors with a JSON body
 * `{"error": CODE, "message": SENTENCE, …details}` (docs/errors.md); the
 * bridge keeps the code and details, and for the 401 reasons says what to
 * fix on the bridge's side (the key file, the clock), since the hub's
 * sentence is written for someone signing by hand. Network failures and
 * answers that are not the hub's get the bridge's own codes.
 */
import { ERROR_STATUS, RelayError, type ErrorCode } from '../errors.js';

export interface HubSide {
  /** The hub's base URL, as the user gave it. */
  url: string;
  agent: string;
  keyFile: string;
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code);
}

/** The bridge's sentence for each reason the hub gives for refusing a signature. */
function signatureAdvice(code: ErrorCode, side: HubSide): string | null {
  const { url, agent, keyFile } = side;
  switch (code) {
    case 'unknown_agent':
      return `The hub at ${url} holds no key for agent ${agent} (unknown_agent). ` +
        `Ask its operator to run \`p-e-relay keys add ${agent}\` and copy that key into ${keyFile}, ` +
        `or start the bridge with the --agent the hub knows you by.`;
    case 'bad_signature':
      return `The hub at ${url} says the signature does not match (bad_signature): the key in ${keyFile} is not the ` +
        `one the hub holds for agent ${agent}. Copy the hub's keys/${agent}.key into ${keyFile} and send the call again.`;
    case 'stale_timestamp':
      return `The hub at ${url} refused the signature as stale (stale_timestamp): this machine's clock and the hub's differ by more than 60 s. Set the clock right (NTP) and send the call again.`;
    case 'replayed_signature':
    case 'malformed_authorization':
      return `The hub at ${url} refused the bridge's signature (${code}). ` +
        `The bridge signs every call afresh, so send the call again; if this repeats, ` +
        `the bridge and the hub are of different versions.`;
    default:
      return null;
  }
}

/** A refusal for an HTTP error the hub answered instead of an MCP result. */
export function hubRefusal(status: number, body: string, retryAfter: string | null, side: HubSide): RelayError {
  let parsed: Record<string, unknown> | null = null;
  try {
    const value: unknown = JSON.parse(body);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) parsed = value as Record<string, unknown>;
  } catch {
    // not JSON: a proxy's page, or not a p-e-relay hub at all
  }
  const code = parsed?.error;
  if (parsed && isErrorCode(code) && typeof parsed.message === 'string') {
    const { error: _code, message, ...details } = parsed;
    if (code === 'rate_limited' && typeof details.retryAfterS !== 'number' && retryAfter !== null && /^\d+$/.test(retryAfter)) {
      details.retryAfterS = Number(retryAfter);
    }
    return new RelayError(code, signatureAdvice(code, side) ?? message, { ...details, status });
  }
  const said = typeof parsed?.message === 'string' ? ` It said: ${parsed.message}` : '';
  return new RelayError(
    'hub_error',
    `The hub at ${side.url} answered HTTP ${status}, which the bridge cannot read as a p-e-relay answer, ` +
      `so the call's outcome is unknown.${said} Check that --url points at a p-e-relay hub (the bridge posts to its ` +
      `/mcp) and that no proxy in between rewrites its answers.`,
    { status, ...(typeof code === 'string' ? { hubCode: code } : {}) },
  );
}

/** Errors that happen before a byte of the request is sent: the call certainly did not arrive. */
const BEFORE_SENDING: Record<string, string> = {
  ECONNREFUSED: 'nothing is listening there',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved just now',
  EHOSTUNREACH: 'the host cannot be reached',
  ENETUNREACH: 'the network cannot be reached',
  UND_ERR_CONNECT_TIMEOUT: 'connecting timed out',
  'bad port': 'fetch never connects to this port (a reserved one); serve the hub on another',
};

/** The network error's code, dug out of fetch's `TypeError: fetch failed` wrapping (its message when it has none, e.g. "bad port"). */
export function networkCode(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown; errors?: { code?: unknown }[] } })?.cause;
  const code = cause?.code ?? cause?.errors?.[0]?.code ?? (err as { code?: unknown })?.code ?? cause?.message;
  return typeof code === 'string' && code !== '' ? code : 'unknown';
}

/** Whether a hub_unreachable's cause says the request never left (nothing was sent), rather than broke on the way. */
export function nothingSent(cause: unknown): boolean {
  return typeof cause === 'string' && Object.hasOwn(BEFORE_SENDING, cause);
}

export function hubUnreachable(err: unknown, side: HubSide): RelayError {
  const code = networkCode(err);
  const before = BEFORE_SENDING[code];
  if (before) {
    return new RelayError('hub_unreachable', `The hub at ${side.url} cannot be reached (${code}: ${before}), ` +
      `so nothing was sent. Start the hub or fix the bridge's --url, then send the call again.`, { cause: code });
  }
  return new RelayError(
    'hub_unreachable',
    `The connection to the hub at ${side.url} failed (${code}) while the call was under way, ` +
      `so its outcome is unknown. Send a read or a wait again as it is; after an append, ` +
      `look first (list_relays): it may have landed.`,
    { cause: code },
  );
}

/** The hub's event stream for a call ended before it carried the answer. */
export function streamBroken(side: HubSide): RelayError {
  return new RelayError(
    'hub_unreachable',
    `The hub at ${side.url} closed the connection before answering (it may have restarted). Send a wait again as it is; after an append, look first (list_relays): it may have landed.`,
    { cause: 'closed' },
  );
}

export function hubTimeout(side: HubSide, ms: number): RelayError {
  return new RelayError('hub_timeout', `The hub at ${side.url} did not answer within ${Math.round(ms / 1000)} s. ` +
    `Check that it is healthy (GET ${side.url.replace(/\/+$/, '')}/healthz) and send the call again.`, { timeoutMs: ms });
}
