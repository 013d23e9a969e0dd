/**
 * The node:http server under the hub: its header and request timeouts, its
 * connection slots, and the sockets it cuts at shutdown. Header and request
 * timeouts keep a stalled client from holding a socket before its request
 * is in; after that, waits and streams are bounded by the gate's slots and
 * end when their client goes away.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from '../log.js';
import { ConnectionSlots } from './connection-slots.js';
import type { HubMetrics } from './metrics.js';

export interface ListenerOptions {
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Open connections at most (past it a newcomer closes an unsigned one, or is closed: connection-slots.ts). */
  maxConnections?: number;
  /** Open connections from one client network (IPv4 /24, IPv6 /64) at most, so one client cannot take every slot. */
  maxConnectionsPerAddress?: number;
}

export const DEFAULT_MAX_CONNECTIONS = 2048;
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;

/** How long close() lets requests being sent or answered finish before it cuts their connections. */
const CLOSE_GRACE_MS = 250;

export class Listener {
  readonly server: http.Server;
  /** Every open socket, for close() to cut what has not finished after its grace. */
  private readonly sockets = new Set<Socket>();

  constructor(options: ListenerOptions, metrics: HubMetrics) {
    const headersTimeout = options.headersTimeoutMs ?? 10_000;
    this.server = http.createServer({
      maxHeaderSize: 16_384,
      headersTimeout,
      // The time to receive a whole request (headers and body); a wait or a
      // stream being answered is not bound by it.
      requestTimeout: options.requestTimeoutMs ?? 30_000,
      keepAliveTimeout: 5_000,
      // Node checks those two timeouts on this interval (30 s by default, which
      // would let a stalled client linger far past them).
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, headersTimeout / 4)),
    });
    this.server.maxHeadersCount = 100;
    // Room for every wait and stream slot plus reads (beyond it the kernel's
    // file descriptors, not clients, would decide who is served), and one
    // client network may hold only part of them; past either, an unsigned
    // connection is let go before a signed one (connection-slots.ts). The
    // header and request timeouts above free what an attacker does hold.
    const slots = new ConnectionSlots(options.maxConnections ?? DEFAULT_MAX_CONNECTIONS, options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS);
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      const admission = slots.admit(socket);
      // Neither answered: a connection closed here has not had a byte read, or was never signed.
      if (admission !== 'admitted') metrics.refused('too_many_connections');
      if (admission === 'refused') socket.destroy();
    });
  }

  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /**
   * Stops accepting first, so nothing new starts while `windDown` ends what
   * the hub holds open; then closes idle connections at once, and the
   * connections of requests still being sent or answered after a grace.
   */
  async close(log: Logger, windDown: () => Promise<void>): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const woundDown = windDown();
    // Idle, to node, includes every answer that has ended, a stream whose
    // last bytes a client that stopped reading will never take among them:
    // those sockets go now.
    this.server.closeIdleConnections();
    const grace = setTimeout(() => {
      const { sockets } = this;
      if (sockets.size === 0) return;
      log.info(`shutting down: closed ${sockets.size} connection${sockets.size === 1 ? '' : 's'} whose request was still being sent or answered ${CLOSE_GRACE_MS} ms into the shutdown`);
      for (const socket of sockets) socket.destroy();
    }, CLOSE_GRACE_MS);
    grace.unref();
    await Promise.all([woundDown, closed]);
    clearTimeout(grace);
  }
}
