/**
 * POST /mcp: stateless Streamable HTTP (spec §9, §13), both protocol eras.
 *
 * The hub has read the raw body against the cap, decoded it strictly
 * (body.ts) and checked any credential, as this route's row says
 * (routes.ts, with `mcpIntake` below); here the message is routed by era
 * with the SDK's own predicate (`isLegacyRequest`: a request carrying the
 * 2026-07-28 `_meta` envelope, or a modern MCP-Protocol-Version header, is
 * modern):
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
import { isLegacyRequest, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { toolNamed } from '../mcp/tools/index.js';
import { JSONRPC_PARSE_ERROR } from './body.js';
import type { Decoded, DecodedRequest, HubRequest } from './context.js';
import { READ_INTAKE, type Intake } from './intake.js';
import type { DoorCarrier } from './mcp-server-pool.js';
import { sendJson } from './respond.js';

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}, data?: { code: string }): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null }, headers);
}

/**
 * How a message is taken in: its tool's door facts. A verified signature is
 * spent only by a call that buys something (an append, a wait's slot, the
 * end of a call); a signed ping or read is checked (a wrong credential is
 * still a 401) but not spent, so it cannot fill the guard. A 2025-era
 * cancel is spent: sent again, it would end the agent's next call that
 * reuses the JSON-RPC id. A body that could not be decoded is taken in as a
 * read: its credential is still checked before the refusal is answered.
 */
export function mcpIntake(decoded: Decoded): Intake {
  if (!('message' in decoded)) return READ_INTAKE;
  const m = decoded.message as Message | null;
  if (typeof m !== 'object' || m === null) return READ_INTAKE;
  if (m.method === 'notifications/cancelled') return { ...READ_INTAKE, spendsSignature: true };
  const tool = m.method === 'tools/call' ? toolNamed(m.params?.name) : undefined;
  return tool ? { facts: tool.door, spendsSignature: tool.door.signed } : READ_INTAKE;
}

/** GET, DELETE and the rest: there is no session to stream from or delete, in either era. */
export function mcpMethodNotAllowed({ req, res, ctx }: HubRequest): void {
  ctx.metrics.refused('method_not_allowed');
  req.resume();
  jsonRpcError(res, 405, -32000, `Method not allowed: /mcp is stateless Streamable HTTP and answers POST only (there is no session to stream from or to delete).`, { Allow: 'POST' });
}

/** POST /mcp: its body decoded strictly before any SDK sees it (not UTF-8, not JSON, a batch), and its credential checked, by the hub. */
export async function handleMcp(request: DecodedRequest): Promise<void> {
  const { res, ctx, decoded } = request;
  if ('refusal' in decoded) {
    const { refusal } = decoded;
    ctx.metrics.refused(refusal.code);
    return jsonRpcError(res, 400, Number(refusal.details.jsonRpcCode ?? JSONRPC_PARSE_ERROR), refusal.message, {}, { code: refusal.code });
  }
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  const call: McpCall = {
    request: webRequest(request.req, request.url, request.body, gone.signal),
    message: decoded.message,
    stream: wantsProgressStream(decoded.message, request.req.headers.accept),
    agent: request.door.agent,
  };
  if (await isLegacyRequest(call.request, call.message)) return answerLegacy(request, call);
  return answerModern(request, call);
}

interface McpCall {
  /** The request as the SDK's web-standard entries take it. */
  request: Request;
  message: unknown;
  /** Answered as an event stream: a call that streams progress, asking for it. */
  stream: boolean;
  agent: string | null;
}

/** 2026-07-28: the SDK's handler, which builds (here: borrows) a server per request and reaches it the request's door. */
async function answerModern({ res, ctx, door }: HubRequest, { request, message, stream, agent }: McpCall): Promise<void> {
  const handlers = ctx.mcpServers.modern();
  const handler = stream ? handlers.sse : handlers.auto;
  const response = await handler.fetch(request, { parsedBody: message, authInfo: { token: '', clientId: agent ?? 'anonymous', scopes: [], extra: { door } satisfies DoorCarrier } });
  return sendResponse(response, res);
}

/** 2025-era: a pooled server on a fresh stateless transport; a signed cancel ends the call it names. */
async function answerLegacy({ res, ctx, door }: HubRequest, { request, message, stream, agent }: McpCall): Promise<void> {
  const pool = ctx.mcpServers;
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
