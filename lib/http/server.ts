/**
 * The HTTP hub (`serve --http`): one node:http server for the MCP endpoint,
 * REST, the SSE stream, health and metrics, all over one store.
 *
 * Every request passes the DNS-rebinding check first (on loopback), then
 * its route; a route throws a RelayError and this module answers it as
 * JSON. Header and request timeouts keep a stalled client from holding a
 * socket before its request is in; after that, waits and streams are
 * bounded by the gate's slots and end when their client goes away.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { silentLogger, type Logger } from '../log.js';
import type { RelayStore } from '../store/store.js';
import { KeyRing } from '../auth/key-ring.js';
import { listRecordNames } from '../disk/record-names.js';
import { readOnlyRefusal } from '../store/append/read-only.js';
import { ReplayGuard } from '../auth/replay-guard.js';
import { bodyCapFor, DEFAULT_RECORD_CAP, readBody } from './body.js';
import { DEFAULT_HOST, DEFAULT_PORT } from './defaults.js';
import type { HubContext } from './context.js';
import { HttpGate } from './gate.js';
import { ConnectionSlots } from './connection-slots.js';
import { DEFAULT_LIMITS, type Limits } from './limits.js';
import { handleMcp, McpServerPool } from './mcp-endpoint.js';
import { HubMetrics } from './metrics.js';
import { rebindingGuard } from './rebinding.js';
import { sendError } from './respond.js';
import { handleRest } from './rest.js';
import { noRoute } from './routes.js';
import { handleEvents } from './sse.js';
import { handleWeb } from './web-view.js';

export { DEFAULT_HOST, DEFAULT_PORT };

export interface HubOptions {
  /** A prepared store (RelayStore.prepare); the hub opens it and leaves closing it to the caller. */
  store: RelayStore;
  /** The keys directory: keys/<agent>.key. */
  keys: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** The largest request body (default: what a record of recordCap needs in JSON, body.ts). */
  bodyCap?: number;
  /** The largest record over HTTP, in its own bytes (default 65,536). */
  recordCap?: number;
  limits?: Partial<Limits>;
  /** Web origins (besides loopback ones) whose pages may call this hub. */
  allowedOrigins?: string[];
  sseKeepAliveMs?: number;
  sseMaxBufferedBytes?: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Open connections at most (past it a newcomer closes an unsigned one, or is closed: connection-slots.ts). */
  maxConnections?: number;
  /** Open connections from one client network (IPv4 /24, IPv6 /64) at most, so one client cannot take every slot. */
  maxConnectionsPerAddress?: number;
  log?: Logger;
}

export interface Hub {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly context: HubContext;
  close(): Promise<void>;
}

export async function startHub(options: HubOptions): Promise<Hub> {
  const log = options.log ?? silentLogger;
  const { store } = options;
  const keys = await KeyRing.open(options.keys, { log });
  const limits: Limits = { ...DEFAULT_LIMITS, ...options.limits };
  const holdsRecords = async () => (await listRecordNames(store.paths.corpus)).length > 0;
  const guard = new ReplayGuard(store.paths.replay, { log, perAgentPerMinute: limits.signaturesPerMinute, holdsRecords });
  const metrics = new HubMetrics();
  const recordCap = options.recordCap ?? DEFAULT_RECORD_CAP;
  const gate = new HttpGate(limits, { keys, guard }, metrics, store.readOnly ? readOnlyRefusal(store.primary) : null, recordCap);
  keys.on('revoked', (agent) => gate.revoke(agent));
  // Every agent given a key is on the roster (SPEC §8d), so an append to one that has not called yet is not "unknown".
  for (const agent of await keys.agents()) await store.agents.roster.seen(agent, 'key');
  let ready = false;
  const ctx: HubContext = {
    store,
    gate,
    metrics,
    log,
    bodyCap: options.bodyCap ?? bodyCapFor(recordCap),
    recordCap,
    sseKeepAliveMs: options.sseKeepAliveMs ?? 15_000,
    sseMaxBufferedBytes: options.sseMaxBufferedBytes ?? 1 << 20,
    ready: () => ready,
  };
  const pool = new McpServerPool(store, ctx.recordCap);

  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const server = http.createServer({
    maxHeaderSize: 16_384,
    headersTimeout,
    // The time to receive a whole request (headers and body); a wait or a
    // stream being answered is not bound by it.
    requestTimeout,
    keepAliveTimeout: 5_000,
    // Node checks those two timeouts on this interval (30 s by default, which
    // would let a stalled client linger far past them).
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, headersTimeout / 4)),
  });
  server.maxHeadersCount = 100;
  // Room for every wait and stream slot plus reads (beyond it the kernel's
  // file descriptors, not clients, would decide who is served), and one
  // client network may hold only part of them; past either, an unsigned
  // connection is let go before a signed one (connection-slots.ts). The
  // header and request timeouts above free what an attacker does hold.
  const slots = new ConnectionSlots(options.maxConnections ?? DEFAULT_MAX_CONNECTIONS, options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS);
  // Every open socket, for close() to cut what has not finished after its grace.
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const admission = slots.admit(socket);
    // Neither answered: a connection closed here has not had a byte read, or was never signed.
    if (admission !== 'admitted') metrics.refused('too_many_connections');
    if (admission === 'refused') socket.destroy();
  });
  const host = options.host ?? DEFAULT_HOST;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? DEFAULT_PORT, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    // A busy port: nothing may be left holding the process open (the keys watcher above is).
    await keys.close();
    throw err;
  }
  const { port, address } = server.address() as AddressInfo;
  const rebinding = rebindingGuard(host, port, options.allowedOrigins, address);

  server.on('request', (req, res) => {
    void route(req, res).catch((err) => sendError(res, err, log, ctx.metrics));
  });
  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    rebinding.check(req.headers);
    const origin = req.headers.origin;
    if (origin !== undefined && rebinding.allowsOrigin(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
    }
    const url = new URL(req.url ?? '/', 'http://hub.invalid');
    if (req.method === 'OPTIONS' && origin !== undefined) return preflight(res);
    if (url.pathname === '/mcp') return handleMcp(req, res, url, ctx, pool);
    if (url.pathname === '/events') return handleEvents(req, res, url, ctx);
    if (await handleRest(req, res, url, ctx)) return;
    // The web view's files and no_route need no credential either, but one
    // that is sent is checked (docs/http.md), and not spent.
    if (req.headers.authorization !== undefined) await ctx.gate.open(req, res, url, await readBody(req, ctx.bodyCap), 'http', { spend: false });
    if (handleWeb(req, res, log, ctx.metrics)) return; // GET / and /assets/*: the web view (lib/web/)
    req.resume();
    throw noRoute(url.pathname);
  }

  guard.start();
  store.open().then(
    () => (ready = true),
    (err) => log.error(`cannot open the corpus: ${(err as Error).message}`),
  );
  const hostForUrl = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${hostForUrl}:${port}`,
    host,
    port,
    context: ctx,
    async close() {
      // Stop accepting first, so nothing new starts while the rest winds down.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      gate.close(); // ends waits and streams
      guard.stop();
      // Idle, to node, includes every answer that has ended, a stream whose
      // last bytes a client that stopped reading will never take among them:
      // those sockets go now.
      server.closeIdleConnections();
      // Requests still being sent or answered get a moment; then they go too.
      const grace = setTimeout(() => {
        if (sockets.size === 0) return;
        log.info(`shutting down: closed ${sockets.size} connection${sockets.size === 1 ? '' : 's'} whose request was still being sent or answered ${CLOSE_GRACE_MS} ms into the shutdown`);
        for (const socket of sockets) socket.destroy();
      }, CLOSE_GRACE_MS);
      grace.unref();
      await Promise.all([keys.close(), closed]);
      clearTimeout(grace);
    },
  };
}

/** How long close() lets requests being sent or answered finish before it cuts their connections. */
const CLOSE_GRACE_MS = 250;

export const DEFAULT_MAX_CONNECTIONS = 2048;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;

function preflight(res: http.ServerResponse): void {
  res.writeHead(204, {
    'Access-Control-Allow-Methods': 'GET, HEAD, POST',
    'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, Last-Event-ID, Mcp-Protocol-Version',
    'Access-Control-Max-Age': '600',
  });
  res.end();
}
