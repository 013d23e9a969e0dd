/**
 * What a route's handler is handed: what every route of one hub shares (the
 * store, the gate whose doors every credential check and budget go through,
 * the counters), and one request as the hub took it in (intake.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Admission, Door } from '../doors/door.js';
import type { RelayStore } from '../store/store.js';
import type { HttpGate } from './gate.js';
import type { McpServerPool } from './mcp-server-pool.js';
import type { HubMetrics } from './metrics.js';

export interface HubContext {
  store: RelayStore;
  gate: HttpGate;
  metrics: HubMetrics;
  log: Logger;
  /** The MCP servers POST /mcp lends to its requests. */
  mcpServers: McpServerPool;
  /** The largest request body (body.ts). */
  bodyCap: number;
  /** The largest record over HTTP, in its own bytes (body.ts). */
  recordCap: number;
  /** Milliseconds between keep-alive comments on an idle event stream. */
  sseKeepAliveMs: number;
  /** Bytes an event stream may have waiting for a slow reader before it is dropped. */
  sseMaxBufferedBytes: number;
  /** Whether the start-up scan of the corpus is done. */
  ready(): boolean;
}

/** A body decoded before its intake was chosen (POST /mcp's JSON-RPC message), or why it could not be. */
export type Decoded = { readonly message: unknown } | { readonly refusal: RelayError };

/** One request, taken in: its body read once and its credential checked once, as its route's row says. */
export interface HubRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly ctx: HubContext;
  /** The raw body; empty when the route had no use for it and no credential came to be checked against it. */
  readonly body: Buffer;
  /** The request's door: its credential checked, the client's going away wired to it. */
  readonly door: Door;
  /** The door facts of the call, from the route's row: whether it must be signed, what it spends. */
  readonly facts: Admission;
  /** The path's captures (a record's id). */
  readonly match: RegExpExecArray;
}

/** A request whose body was decoded before it was admitted (POST /mcp). */
export interface DecodedRequest extends HubRequest {
  readonly decoded: Decoded;
}

export type Handler<R extends HubRequest = HubRequest> = (request: R) => Promise<void> | void;
