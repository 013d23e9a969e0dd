/**
 * The MCP servers POST /mcp lends its requests (building one costs ~0.3–0.6
 * ms; a pooled one serves one request at a time), one pool per protocol era,
 * and the 2025-era calls in flight that a signed cancel may end.
 */
import type { ServerResponse } from 'node:http';
import { createMcpHandler, type McpHttpHandler, type McpRequestContext, type McpServer } from '@modelcontextprotocol/server';
import type { Door, DoorRef } from '../doors/door.js';
import { createMcpServer } from '../mcp/server.js';
import type { RelayStore } from '../store/store.js';

export interface Lease {
  server: McpServer;
  door: DoorRef;
}

/** How the door of one modern request reaches the server the SDK builds for it. */
export interface DoorCarrier {
  door: Door;
}

export class McpServerPool {
  private readonly idle: Lease[] = [];
  private readonly idleModern: Lease[] = [];
  private modernHandlers: { auto: McpHttpHandler; sse: McpHttpHandler } | null = null;
  private readonly calls = new Map<string, ServerResponse>();

  constructor(
    private readonly store: RelayStore,
    /** The hub's record cap, which append_relay's text states (a record sent through this door meets it first). */
    private readonly requestCap?: number,
    private readonly keepIdle = 32,
  ) {}

  /** A server for one request of this era: the SDK marks a server with the era it serves, so each era keeps its own. */
  acquire(era: 'legacy' | 'modern' = 'legacy'): Lease {
    const pooled = (era === 'legacy' ? this.idle : this.idleModern).pop();
    if (pooled) return pooled;
    // Between requests a pooled server belongs to nobody: no door, and a call that somehow reached it is refused.
    const door: DoorRef = { current: null };
    return { server: createMcpServer(this.store, door, { http: true }), door };
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
    const m = message as { method?: string; id?: string | number } | null;
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
