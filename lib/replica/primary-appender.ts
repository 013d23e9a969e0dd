/**
 * A replica's appends. A local read-only mirror served with `serve
 * --read-only --primary URL --forward` stores nothing itself: it sends each
 * append to the primary's signed HTTP door, and answers with the primary's
 * answer once the record has also reached this mirror (at most
 * ARRIVAL_WAIT_MS), so the agent's next read here finds the id it was given.
 *
 * How it goes depends on the door it came through:
 * - Over this replica's HTTP door the client signed its request: that
 *   request goes on to the same route of the primary as it came (sendOn),
 *   so the primary spends the client's own signature, as if the client had
 *   sent it there. A signature is spent once across the primary and all
 *   its replicas, and one request stores one record.
 * - Over stdio (`serve --forward --agent NAME`) nothing is signed: it goes
 *   out the way the bridge sends one (lib/bridge/: the same client,
 *   signature, key file, idempotency key and retries), signed as the agent.
 *
 * One id space: nothing is queued and no id is given here. While the
 * primary cannot be reached an append is refused (hub_unreachable, naming
 * the key to resend it under), and reads and waits go on answering from the
 * mirror.
 */
import { ProtocolError, type Tool } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { asRelayError, ERROR_STATUS, RelayError, type ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import { decodeRecordText } from '../model/record.js';
import type { Appender, SignedRequest } from '../doors/door.js';
import { ERROR_META_KEY } from '../mcp/result.js';
import type { AppendResult, RelayStore } from '../store/store.js';
import { hubTakesKey, KEYED_TOOL, KEY_PARAM, sendWithRetries } from '../bridge/append-retry.js';
import { answerKeyOf } from '../model/answer-key.js';
import { bytesKey } from '../mcp/tools/named-key.js';
import { bridgeKey } from '../bridge/bridge-key.js';
import { callTimeoutMs } from '../bridge/forward-call.js';
import { hubRefusal, hubTimeout, hubUnreachable, nothingSent, type HubSide } from '../bridge/hub-answers.js';
import { HubClient } from '../bridge/hub-client.js';
import { hubFetch } from '../bridge/hub-fetch.js';
import type { HubUrl } from '../bridge/hub-url.js';
import { arrival } from './arrival.js';

/** How long an append waits for its record to reach this mirror before it answers anyway; `mirror --every 1000` brings it in about a second. */
export const ARRIVAL_WAIT_MS = 10_000;
const LIST_TIMEOUT_MS = 5_000;

export interface ReplicaOptions {
  primary: HubUrl;
  /** Where each signing agent's key file is (keys/<agent>.key, the primary's key copied). */
  keys: string;
  /** The mirror this replica serves, where a forwarded record arrives. */
  store: RelayStore;
  log: Logger;
  arrivalWaitMs?: number;
}

/** One signing agent's way to the primary. */
interface Route {
  hub: HubClient;
  /** The primary's tool list, once fetched: whether its append takes a key, so a retry is safe. */
  tools: Tool[] | null;
}

export interface PrimaryAppender {
  append: Appender;
  close(): Promise<void>;
}

export function primaryAppender(options: ReplicaOptions): PrimaryAppender {
  const { primary, keys, store, log } = options;
  const routes = new Map<string, Route>();
  const routeFor = (agent: string): Route => {
    let route = routes.get(agent);
    if (!route) {
      const key = bridgeKey(keys, agent);
      const side: HubSide = { url: primary.base, agent, keyFile: key.file };
      route = { hub: new HubClient(primary, hubFetch(key, side, log), side, log), tools: null };
      routes.set(agent, route);
    }
    return route;
  };

  const append: Appender = async (bytes, { id, idempotencyKey, agent }, signed) => {
    if (signed !== undefined) return arrived(await sendOn(signed, primary, idempotencyKey, log));
    if (agent === undefined) {
      throw new RelayError(
        'unsigned',
        'This replica forwards each append to its primary signed as the agent that sends it, and this call names none, ' +
          'so nothing was sent. Serve the replica with --agent NAME (over HTTP: sign the call).',
      );
    }
    const route = routeFor(agent);
    // Always keyed: a retry (ours, or the agent's under the key the refusal names) is stored once. An answer's key is
    // the one the primary would derive (the same function, this mirror's id shape is the primary's), sent explicitly;
    // any other record's is the key of its bytes, as the primary keys a signed append.
    const text = decodeRecordText(bytes);
    const key = idempotencyKey ?? answerKeyOf(agent, bytes, store.shape) ?? bytesKey(text);
    const args = { bytes: text, ...(id === undefined ? {} : { id }), [KEY_PARAM]: key };
    route.tools ??= await route.hub.listTools(LIST_TIMEOUT_MS).then(({ tools }) => tools, () => null);
    const timeoutMs = callTimeoutMs(KEYED_TOOL, args);
    const toolDefinition = unvalidated(route.tools);
    let result: CallToolResult;
    try {
      const send = () => route.hub.run({}, timeoutMs, (client) => client.callTool({ name: KEYED_TOOL, arguments: args }, { timeout: timeoutMs, toolDefinition })) as Promise<CallToolResult>;
      result = await sendWithRetries(send, { name: KEYED_TOOL, keyed: hubTakesKey(route.tools), log });
    } catch (err) {
      throw notForwarded(err, primary, key);
    }
    return arrived(storedOrRefused(result, primary));
  };

  /** The primary's answer, once its record has reached this mirror too (or the wait for it is over). */
  const arrived = async (stored: AppendResult): Promise<AppendResult> => {
    const waitMs = options.arrivalWaitMs ?? ARRIVAL_WAIT_MS;
    if (!(await arrival(store, stored.id, waitMs))) {
      log.warn(`${stored.id} is stored on the primary but has not reached this mirror in ${waitMs / 1000} s; is \`p-e-relay mirror --every\` filling it? Answering with the primary's answer.`);
    }
    return stored;
  };

  return {
    append,
    async close() {
      await Promise.all([...routes.values()].map((route) => route.hub.close()));
    },
  };
}

/**
 * A client's signed append (over this replica's HTTP door), sent on to the
 * same route of the primary as it came: the client's signature, headers and
 * body, nothing signed anew. The primary's one-time guard spends that
 * signature, so a captured request replayed at another replica, or at the
 * primary itself, is refused there, and one request stores one record.
 *
 * Sent once, never retried: the same signature sent again would be refused
 * as a replay whether or not the first try landed. A refusal comes back as
 * the primary's own code and sentence.
 */
async function sendOn(signed: SignedRequest, primary: HubUrl, idempotencyKey: string | undefined, log: Logger): Promise<AppendResult> {
  const mcp = signed.target.split('?')[0] === '/mcp';
  const headers = { ...signed.headers, accept: mcp ? 'application/json, text/event-stream' : 'application/json' };
  const side: HubSide = { url: primary.base, agent: '', keyFile: '' };
  const timeoutMs = callTimeoutMs(KEYED_TOOL, {});
  let response: Response;
  let text: string;
  try {
    response = await fetch(new URL(signed.target, primary.base), { method: 'POST', headers, body: signed.body, signal: AbortSignal.timeout(timeoutMs) });
    text = await response.text();
  } catch (err) {
    const failure = (err as Error)?.name === 'TimeoutError' ? hubTimeout(side, timeoutMs) : hubUnreachable(err, side);
    throw notForwarded(failure, primary, idempotencyKey);
  }
  log.debug(`forwarded a signed append to the primary's ${signed.target}: HTTP ${response.status}`);
  if (!response.ok) throw refusalOf(response.status, text, response.headers.get('retry-after'), side);
  let message: { result?: unknown; error?: { message?: unknown } } | null;
  try {
    message = mcp ? jsonRpcMessage(text, response.headers.get('content-type')) : { result: { content: [], structuredContent: JSON.parse(text) as unknown } };
  } catch {
    message = null;
  }
  if (message?.error) {
    throw new RelayError('hub_error', `The primary at ${primary.base} refused the forwarded append at the protocol level (${String(message.error.message)}), so nothing was stored.`);
  }
  if (typeof message?.result !== 'object' || message.result === null) {
    throw new RelayError('hub_error', `The primary at ${primary.base} answered the forwarded append with HTTP ${response.status} but no answer this replica can read, ` +
      'so its outcome is unknown. Check that --primary points at a p-e-relay hub; look (list_relays) before sending it again.');
  }
  return storedOrRefused(message.result as CallToolResult, primary);
}

/** The primary's HTTP refusal as its own code and sentence (a 401 replayed_signature stays one). */
function refusalOf(status: number, text: string, retryAfter: string | null, side: HubSide): RelayError {
  try {
    const { error: code, message, ...details } = JSON.parse(text) as Record<string, unknown>;
    if (typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code) && typeof message === 'string') return new RelayError(code as ErrorCode, message, details);
  } catch {
    // not the primary's JSON: said below in the bridge's words
  }
  return hubRefusal(status, text, retryAfter, side);
}

/** The JSON-RPC answer of a /mcp call: the body itself, or the last message of its event stream. */
function jsonRpcMessage(text: string, contentType: string | null): { result?: unknown; error?: { message?: unknown } } | null {
  if (!/^text\/event-stream/i.test(contentType ?? '')) return JSON.parse(text) as { result?: unknown };
  const messages = text.split('\n').filter((line) => line.startsWith('data:')).map((line) => JSON.parse(line.slice(5)) as { id?: unknown; result?: unknown; error?: { message?: unknown } });
  return messages.filter((m) => m.id !== undefined).at(-1) ?? null;
}

/**
 * The primary's append as it listed it, minus its output schema, for the SDK client not to check the answer against.
 * The list is fetched unsigned (reads need no signature), so it is the contract of an unnamed caller; the append goes
 * out signed, and the primary answers a named agent's append by the named contract, which adds unknownRecipients when
 * to: names no agent it knows. Checked against the unnamed schema, that answer failed ("additional properties") after
 * the record was stored, and the replica said nothing was. The answer is checked here (storedOrRefused), and the
 * replica's own door lists the contract its caller is answered by.
 */
function unvalidated(tools: Tool[] | null): Tool | undefined {
  const listed = tools?.find((tool) => tool.name === KEYED_TOOL);
  if (!listed) return undefined; // nothing listed: the SDK has no schema to check against either
  const { outputSchema: _schema, ...rest } = listed;
  return rest;
}

/** The primary's answer as the store's, or its refusal as the same RelayError it gave. */
function storedOrRefused(result: CallToolResult, primary: HubUrl): AppendResult {
  if (result.isError) {
    const { code, ...details } = (result._meta?.[ERROR_META_KEY] ?? {}) as { code?: unknown } & Record<string, unknown>;
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    if (typeof code === 'string' && Object.hasOwn(ERROR_STATUS, code)) {
      throw new RelayError(code as ErrorCode, text.startsWith(`${code}: `) ? text.slice(code.length + 2) : text, details);
    }
    throw new RelayError(
      'hub_error',
      `The primary at ${primary.base} refused the append with a code this replica does not know (${String(code)}), ` +
        `so nothing was stored: ${text}`,
      { hubCode: code ?? null },
    );
  }
  const stored = result.structuredContent as AppendResult | undefined;
  if (typeof stored?.id !== 'string') {
    throw new RelayError(
      'hub_error',
      `The primary at ${primary.base} answered the append without the record's id, so its outcome is unknown. ` +
        'Check that --primary points at a p-e-relay hub; look (list_relays) before sending it again.',
    );
  }
  return stored;
}

/** Why the append did not reach the primary (or its answer did not come back), in the replica's words, naming the key to resend it under (if it has one). */
function notForwarded(err: unknown, primary: HubUrl, key: string | undefined): RelayError {
  if (err instanceof ProtocolError) {
    return new RelayError(
      'hub_error',
      `The primary at ${primary.base} refused the forwarded append at the protocol level (${err.message}), ` +
        'so nothing was stored. Check that --primary points at a p-e-relay hub of this version.',
    );
  }
  const failure = asRelayError(err);
  const resend =
    'Reads and waits here go on answering from this mirror. ' +
    (key === undefined
      ? 'Once the primary answers, look (list_relays) before sending the append again, signed anew: it carried no idempotency key.'
      : `Send the append again once the primary answers, with idempotency_key "${key}": it is stored once, whatever an earlier try did.`);
  const details = { ...failure.details, primary: primary.base, ...(key === undefined ? {} : { idempotencyKey: key }) };
  switch (failure.code) {
    case 'hub_unreachable': {
      const cause = String(failure.details.cause ?? 'unknown');
      const what = nothingSent(cause)
        ? `The primary at ${primary.base} cannot be reached (${cause}), so the append was not sent: this replica stored nothing, queued nothing and gave it no id.`
        : `The connection to the primary at ${primary.base} broke while the append was under way (${cause}), so whether it was stored there is unknown; this replica queued nothing and gave it no id.`;
      return new RelayError('hub_unreachable', `${what} ${resend}`, details);
    }
    case 'hub_timeout':
      return new RelayError(
        'hub_timeout',
        `The primary at ${primary.base} did not answer the append in time, so whether it was stored there is unknown; ` +
          `this replica queued nothing. ${resend}`,
        details,
      );
    case 'key_unusable':
      return new RelayError(
        'key_unusable',
        `This replica signs the appends it forwards to the primary with ${String(failure.details.keyFile)}, ` +
          `which it cannot use (${String(failure.details.cause)}), so nothing was sent. ` +
          "Copy the agent's key from the primary's keys/ there (mode 0600), or point --keys at the directory that holds it. " +
          'Reads and waits need no key.',
        details,
      );
    default:
      return failure;
  }
}
