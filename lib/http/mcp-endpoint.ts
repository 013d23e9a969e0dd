/**
 * POST /mcp: stateless Streamable HTTP (SPEC §9, §13), both protocol eras.
 *
 * Per request: read the raw body against the cap, verify any credential,
 * JSON.parse, then route by era with the SDK's own predicate
 * (`isLegacyRequest`: a request carrying the 2026-07-28 `_meta` envelope,
 * or a modern MCP-Protocol-Version header, is modern):
 *
 * - 2026-07-28: the SDK's `createMcpHandler` with legacy rejected, which
 *   enforces the header rules (MCP-Protocol-Version, Mcp-Method, Mcp-Name:
 *   -32020 on a mismatch, -32022 for an unsupported version, 404 for a
 *   removed method such as ping) and builds a server per request. A plain
 *   call is answered as JSON; a wait_for_relay carrying a progress token is
 *   answered as an event stream from the start, with progress every ~10 s.
 *   Closing the stream is the cancel: the wait ends at once.
 * - 2025-era: a pooled McpServer (building one costs ~0.3–0.6 ms; a pooled
 *   one serves one request at a time) on a fresh stateless transport, so a
 *   plain call is answered as `application/json` (the SDK's own legacy leg
 *   always streams); a progress-token wait is an event stream, as above.
 *
 * GET and DELETE are answered 405 here, before the SDK sees them: there is
 * no session to stream from or delete, in either era.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createMcpHandler, isLegacyRequest, WebStandardStreamableHTTPServerTransport, type McpHttpHandler, type McpRequestContext, type McpServer } from '@modelcontextprotocol/server';
import { asRelayError, type RelayError } from '../errors.js';
import type { Door, DoorRef } from '../doors/door.js';
import { createMcpServer } from '../mcp/server.js';
import { toolNamed } from '../mcp/tools/index.js';
import type { RelayStore } from '../store/store.js';
import { JSONRPC_PARSE_ERROR, parseJsonRpcBody, readBody } from './body.js';
import type { HubContext } from './context.js';
import { sendJson } from './respond.js';

interface Lease {
  server: McpServer;
  door: DoorRef;
}

/** How the door of one modern request reaches the server the SDK builds for it. */
interface DoorCarrier {
  door: Door;
}

export class McpServerPool {
  private readonly idle: Lease[] = [];
  private readonly idleModern: Lease[] = [];
  private modernHandlers: { auto: McpHttpHandler; sse: McpHttpHandler } | null = null;
  private readonly calls = new Map<string, ServerResponse>();

  constructor(
    private readonly store: RelayStore,
    /** The hub's body cap, which its tool text states (a record sent through this door meets it first). */
    private readonly requestCap?: number,
    private readonly keepIdle = 32,
  ) {}

  /** A server for one request of this era: the SDK marks a server with the era it serves, so each era keeps its own. */
  acquire(era: 'legacy' | 'modern' = 'legacy'): Lease {
    const pooled = (era === 'legacy' ? this.idle : this.idleModern).pop();
    if (pooled) return pooled;
    // Between requests a pooled server belongs to nobody: no door, and a call that somehow reached it is refused.
    const door: DoorRef = { current: null };
    return { server: createMcpServer(this.store, door, this.requestCap), door };
  }

  release(lease: Lease, era: 'legacy' | 'modern' = 'legacy'): void {
    lease.door.current = null;
    const idle = era === 'legacy' ? this.idle : this.idleModern;
    if (idle.length < this.keepIdle) idle.push(lease);
  }

  /** The 2026-07-28 handlers: one answering JSON unless a notification comes first, one streaming from the start. */
  modern(): { auto: McpHttpHandler; sse: McpHttpHandler } {
    // The SDK asks for a server per request and closes it when the exchange
    // ends; building one costs more than the call it serves, so the factory
    // lends pooled ones and takes each back when it closes.
    const factory = (ctx: McpRequestContext) => {
      const lease = this.acquire('modern');
      lease.door.current = (ctx.authInfo?.extra as DoorCarrier | undefined)?.door ?? null;
      const sdkOnClose = lease.server.server.onclose;
      lease.server.server.onclose = () => {
        sdkOnClose?.();
        lease.server.server.onclose = sdkOnClose;
        this.release(lease, 'modern');
      };
      return lease.server;
    };
    return (this.modernHandlers ??= {
      auto: createMcpHandler(factory, { legacy: 'reject', responseMode: 'auto' }),
      sse: createMcpHandler(factory, { legacy: 'reject', responseMode: 'sse' }),
    });
  }

  /**
   * 2025-era cancels: a client cancels by POSTing notifications/cancelled,
   * which reaches a fresh server instance, not the one holding the call (and
   * the v2 client leaves the call's own stream open). So the hub keeps its
   * signed calls in flight by agent and JSON-RPC id, and a cancel signed by
   * the same agent ends that call as if its client had gone. Unsigned calls
   * hold nothing worth cancelling (waits must be signed); a 2026-07-28
   * client cancels by closing the stream.
   */
  inFlight(agent: string | null, message: unknown, res: ServerResponse): void {
    const m = message as Message | null;
    if (agent === null || m?.method !== 'tools/call' || m.id === undefined) return;
    const key = JSON.stringify([agent, m.id]);
    this.calls.set(key, res);
    res.once('close', () => {
      if (this.calls.get(key) === res) this.calls.delete(key);
    });
  }

  /** Whether this message is a cancel, which it then carries out (or drops: nothing of this agent's by that id is running). */
  cancelled(agent: string | null, message: unknown): boolean {
    const m = message as { method?: string; id?: unknown; params?: { requestId?: unknown } } | null;
    if (m?.method !== 'notifications/cancelled' || m.id !== undefined) return false;
    // Closing the call's response is what its client leaving would do: the door ends the wait and gives its slot back.
    if (agent !== null) this.calls.get(JSON.stringify([agent, m.params?.requestId]))?.destroy();
    return true;
  }

  async close(): Promise<void> {
    const handlers = this.modernHandlers;
    this.modernHandlers = null;
    await Promise.all([handlers?.auto.close(), handlers?.sse.close()]);
  }
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}, data?: { code: string }): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null }, headers);
}

/**
 * Whether a verified signature on this message is spent in the one-time
 * guard: only a call that buys something (an append, a wait's slot, the
 * end of a call) does. A signed ping or read is checked (a wrong credential
 * is still a 401) but not spent, so it cannot fill the guard. A 2025-era
 * cancel is spent: sent again, it would end the agent's next call that
 * reuses the JSON-RPC id.
 */
function spendsSignature(message: unknown): boolean {
  const m = message as Message | null;
  if (typeof m !== 'object' || m === null) return false;
  if (m.method === 'notifications/cancelled') return true;
  return m.method === 'tools/call' && toolNamed(m.params?.name)?.door.signed === true;
}

/** Whether this message is an append_relay call (refused read_only on a mirror whatever its credential). */
function isAppend(message: unknown): boolean {
  const m = message as Message | null;
  return typeof m === 'object' && m !== null && m.method === 'tools/call' && m.params?.name === 'append_relay';
}

export async function handleMcp(req: IncomingMessage, res: ServerResponse, url: URL, ctx: HubContext, pool: McpServerPool): Promise<void> {
  if (req.method !== 'POST') {
    // A credential sent along is still checked (a wrong one is a 401), never spent.
    if (req.headers.authorization !== undefined) await ctx.gate.open(req, res, url, await readBody(req, ctx.bodyCap), 'mcp', { spend: false });
    ctx.metrics.refused('method_not_allowed');
    req.resume();
    return jsonRpcError(res, 405, -32000, `Method not allowed: /mcp is stateless Streamable HTTP and answers POST only (there is no session to stream from or to delete).`, { Allow: 'POST' });
  }
  const body = await readBody(req, ctx.bodyCap);
  // Decoded strictly before any SDK sees it (not UTF-8, not JSON, a batch);
  // a wrong credential is still answered first, and only a call that buys
  // something spends its signature.
  let message: unknown;
  let refusal: RelayError | null = null;
  try {
    message = parseJsonRpcBody(body);
  } catch (err) {
    refusal = asRelayError(err);
  }
  const door = await ctx.gate.open(req, res, url, body, 'mcp', { spend: refusal === null && spendsSignature(message), appends: refusal === null && isAppend(message) });
  if (refusal !== null) {
    ctx.metrics.refused(refusal.code);
    return jsonRpcError(res, 400, Number(refusal.details.jsonRpcCode ?? JSONRPC_PARSE_ERROR), refusal.message, {}, { code: refusal.code });
  }

  const gone = new AbortController();
  res.once('close', () => gone.abort());
  const request = webRequest(req, url, body, gone.signal);
  const stream = wantsProgressStream(message, req.headers.accept);
  const agent = signedAgent(req);

  if (!(await isLegacyRequest(request, message))) {
    const handlers = pool.modern();
    const handler = stream ? handlers.sse : handlers.auto;
    const response = await handler.fetch(request, { parsedBody: message, authInfo: { token: '', clientId: agent ?? 'anonymous', scopes: [], extra: { door } satisfies DoorCarrier } });
    return sendResponse(response, res);
  }

  if (pool.cancelled(agent, message)) {
    res.writeHead(202).end();
    return;
  }
  pool.inFlight(agent, message, res);
  const lease = pool.acquire();
  lease.door.current = door;
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !stream });
  res.once('close', () => {
    void lease.server.close().catch(() => {}).finally(() => pool.release(lease));
  });
  await lease.server.connect(transport);
  await sendResponse(await transport.handleRequest(request, { parsedBody: message }), res);
}

/** The agent a request is signed by: its Authorization header, already verified by the gate (a wrong one never gets here). */
function signedAgent(req: IncomingMessage): string | null {
  return /\bagent=([^,\s]+)/i.exec(req.headers.authorization ?? '')?.[1] ?? null;
}

/** The request as the SDK's web-standard entries take it: the raw bytes already read (and verified) become its body. */
function webRequest(req: IncomingMessage, url: URL, body: Buffer, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return new Request(url, { method: 'POST', headers, body, signal });
}

/** Writes a web Response to node:http, streaming its body as it comes (an event stream stays open as long as the call). */
async function sendResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name === 'set-cookie') headers[name] = response.headers.getSetCookie();
    else headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.once('close', () => void reader.cancel().catch(() => {}));
  // An event stream's frames must leave at once, not when a buffer fills.
  if (response.headers.get('content-type')?.includes('text/event-stream')) res.flushHeaders();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise<void>((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    }
  } catch {
    // The client left mid-stream; the close handlers tidy up.
  }
  res.end();
}

type Message = { id?: string | number; method?: string; params?: { name?: unknown; _meta?: { progressToken?: unknown } } };

function messages(parsed: unknown): Message[] {
  return (Array.isArray(parsed) ? parsed : [parsed]).filter((m): m is Message => typeof m === 'object' && m !== null);
}

/** A call to a tool that streams progress, asking for it, from a client that can read an event stream. */
export function wantsProgressStream(parsed: unknown, accept: string | undefined): boolean {
  if (!accept?.includes('text/event-stream')) return false;
  return messages(parsed).some((m) => m.method === 'tools/call' && toolNamed(m.params?.name)?.door.progress === true && m.params?._meta?.progressToken !== undefined);
}
