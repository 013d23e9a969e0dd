/**
 * POST /mcp: stateless Streamable HTTP (SPEC §9, §13).
 *
 * Per request: read the raw body against the cap, verify any credential,
 * JSON.parse, then hand the parsed message to a fresh transport (a
 * stateless transport cannot be reused) connected to a pooled McpServer
 * (building one costs ~0.3–0.6 ms; a pooled one serves one request at a
 * time). Answers are plain JSON, except a call to a tool that streams
 * progress (wait_for_relay) carrying a progress token, which is answered as
 * an event stream: progress
 * notifications every ~10 s, then the result, so a client with a 25–60 s
 * timeout can wait the full 90 s (in JSON mode the SDK drops notifications).
 *
 * GET and DELETE are answered 405 here, before the SDK sees them: its
 * stateless transport would open a GET stream that never ends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { asRelayError, type RelayError } from '../../errors.js';
import type { DoorRef } from '../door.js';
import { createMcpServer } from '../server.js';
import { toolNamed } from '../tools/index.js';
import type { RelayStore } from '../../store/store.js';
import { JSONRPC_PARSE_ERROR, parseJsonRpcBody, readBody } from '../../http/body.js';
import type { HubContext } from '../../http/context.js';
import { sendJson } from '../../http/respond.js';

interface Lease {
  server: McpServer;
  door: DoorRef;
}

export class McpServerPool {
  private readonly idle: Lease[] = [];
  constructor(
    private readonly store: RelayStore,
    private readonly keepIdle = 32,
  ) {}

  acquire(): Lease {
    const pooled = this.idle.pop();
    if (pooled) return pooled;
    // Between requests a pooled server belongs to nobody: no door, and a call that somehow reached it is refused.
    const door: DoorRef = { current: null };
    return { server: createMcpServer(this.store, door), door };
  }

  release(lease: Lease): void {
    lease.door.current = null;
    if (this.idle.length < this.keepIdle) this.idle.push(lease);
  }
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}, data?: { code: string }): void {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null }, headers);
}

/**
 * Whether a verified signature on this message is spent in the one-time
 * guard: only a call that buys something (an append, a wait's slot) does. A
 * signed ping or read is checked (a wrong credential is still a 401) but not
 * spent, so it cannot fill the guard.
 */
function spendsSignature(message: unknown): boolean {
  const m = message as Message | null;
  return typeof m === 'object' && m !== null && m.method === 'tools/call' && toolNamed(m.params?.name)?.door.signed === true;
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
  const door = await ctx.gate.open(req, res, url, body, 'mcp', { spend: refusal === null && spendsSignature(message) });
  if (refusal !== null) {
    ctx.metrics.refused(refusal.code);
    return jsonRpcError(res, 400, Number(refusal.details.jsonRpcCode ?? JSONRPC_PARSE_ERROR), refusal.message, {}, { code: refusal.code });
  }

  const lease = pool.acquire();
  lease.door.current = door;
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsProgressStream(message, req.headers.accept) });
  res.once('close', () => {
    void lease.server.close().catch(() => {}).finally(() => pool.release(lease));
  });
  await lease.server.connect(transport);
  await transport.handleRequest(req, res, message);
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
