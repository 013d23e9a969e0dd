/**
 * The fetch the bridge gives the SDK's Streamable HTTP client: the one
 * place that sees each request's final bytes, so it is where signing
 * happens (spec §10 signs the exact body, and a fresh signature per call:
 * the hub accepts each one once).
 *
 * The SDK serialises a message with JSON.stringify and hands the string
 * here; this module turns it into bytes once, signs those bytes, and sends
 * those same bytes, so nothing between the signature and the socket can
 * re-encode the body.
 *
 * Each tool call runs inside a CallScope (AsyncLocalStorage: the SDK calls
 * fetch from within the call's own async chain). Through it the fetch
 * learns which call a request belongs to, so a cancelled call closes its
 * own HTTP request (which is what ends a wait on a stateless hub: the
 * cancel notification would reach a fresh server that holds nothing), and
 * it leaves behind what went wrong at the HTTP level, in the bridge's words,
 * for the caller to turn into a refusal.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { authorizationFor } from '../auth/sign.js';
import { TOOLS } from '../mcp/tools/index.js';
import type { SigningKey } from './bridge-key.js';
import { hubRefusal, hubUnreachable, type HubSide } from './hub-answers.js';

/** The tools the hub only runs when signed (spec §9), as the table of tools says. */
export const SIGNED_TOOLS: ReadonlySet<string> = new Set(TOOLS.filter((tool) => tool.door.signed).map((tool) => tool.name));

export interface CallScope {
  /** Aborts the HTTP request that carries this call. */
  signal?: AbortSignal;
  /** Set by the fetch when the hub answered with an HTTP error or could not be reached. */
  failure?: RelayError;
  /** Called once when the hub's event stream for this call ends, whether or not it carried the answer. */
  onStreamEnd?: () => void;
}

export const callScope = new AsyncLocalStorage<CallScope>();

/** The tool a JSON-RPC body calls, or null when it is not a tools/call request. */
export function calledTool(body: string): string | null {
  try {
    const message = JSON.parse(body) as { method?: unknown; params?: { name?: unknown } };
    if (message?.method === 'tools/call' && typeof message.params?.name === 'string') return message.params.name;
  } catch {
    // not ours to judge: the hub answers what it cannot parse
  }
  return null;
}

export function hubFetch(key: SigningKey, side: HubSide, log: Logger): typeof fetch {
  return async (input, init = {}) => {
    const scope = callScope.getStore();
    const headers = new Headers(init.headers);
    let body = init.body;
    let tool: string | null = null;
    let sign: (() => void) | null = null;
    if (typeof body === 'string') {
      tool = calledTool(body);
      const bytes = Buffer.from(body, 'utf8');
      body = bytes;
      if (tool !== null && SIGNED_TOOLS.has(tool)) {
        let keyBytes: Buffer;
        try {
          keyBytes = await key.load();
        } catch (err) {
          if (scope) scope.failure = err as RelayError;
          throw err;
        }
        sign = () => headers.set('Authorization', authorizationFor(key.agent, keyBytes, (init.method ?? 'POST').toUpperCase(), bytes));
        sign();
        log.debug(`signed ${tool} as ${key.agent} (${bytes.length} bytes)`);
      }
    }
    // Only the request that carries the call is tied to the call's signal;
    // the SDK's own cancel notification for it must still go out.
    const signals = [init.signal, tool !== null ? scope?.signal : undefined].filter((s): s is AbortSignal => s != null);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];

    let response: Response;
    try {
      const send = () => fetch(input, { ...init, headers, body, signal });
      response = await send();
      if (sign && (await replayed(response))) response = await signedAnew(sign, send, signal, () => log.debug(`the hub had seen ${tool}'s bytes signed this second; signed them again`));
    } catch (err) {
      if (scope && !signal?.aborted) scope.failure = hubUnreachable(err, side);
      throw err;
    }
    // A GET for the SDK's standalone stream: the hub answers 405 and the SDK knows what that means.
    if ((init.method ?? 'GET').toUpperCase() !== 'POST') return response;

    if (!response.ok) {
      const text = await response.text().catch(() => '');
      const failure = hubRefusal(response.status, text, response.headers.get('retry-after'), side);
      if (scope) scope.failure = failure;
      log.debug(`the hub refused ${tool ?? 'a request'}: HTTP ${response.status} ${failure.code}`);
      return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    if (scope?.onStreamEnd && response.body && /^text\/event-stream/i.test(response.headers.get('content-type') ?? '')) {
      return new Response(watchEnd(response.body, scope.onStreamEnd), { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    return response;
  };
}

/**
 * A new session numbers its requests from 0 again, so its first call can
 * repeat, byte for byte, one an earlier session signed in the same second,
 * and the hub takes a signature once. It refused that before running
 * anything: sign the same bytes again in the next second and send them once more.
 */
async function signedAnew(sign: () => void, send: () => Promise<Response>, signal: AbortSignal | undefined, said: () => void): Promise<Response> {
  await nextSecond(signal);
  sign();
  said();
  return send();
}

/** Whether the hub refused a signature as spent already (its body is read from a clone; the response stays whole). */
async function replayed(response: Response): Promise<boolean> {
  if (response.status !== 401) return false;
  const text = await response.clone().text().catch(() => '');
  return text.includes('"replayed_signature"');
}

/** Resolves just after the clock's next whole second, when a signature's ts differs from every one made before. */
function nextSecond(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 1005 - (Date.now() % 1000));
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** The same stream, calling `onEnd` once when it finishes, breaks or is cancelled. */
function watchEnd(source: ReadableStream<Uint8Array>, onEnd: () => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          end();
        } else controller.enqueue(value);
      } catch (err) {
        controller.error(err);
        end();
      }
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
      end();
    },
  });
}
