/**
 * DNS rebinding protection for a hub bound to loopback. A web page on
 * evil.example can make its own name resolve to 127.0.0.1 and have the
 * victim's browser talk to the hub; the browser still sends `Host:
 * evil.example` and `Origin: http://evil.example`, which is what we check.
 *
 * On loopback the Host must name a loopback address (localhost, 127.0.0.1,
 * [::1], or the bound address), with our port or none, and an Origin, when
 * sent, must be such a loopback origin or one the operator allowed. A hub
 * bound to another interface is reached by names we cannot know, so the
 * check is off there and signatures carry the weight (docs/security.md).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { RelayError } from '../errors.js';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export interface RebindingGuard {
  /** Throws forbidden_host or forbidden_origin for a request that does not come from a local origin. */
  check(headers: IncomingHttpHeaders): void;
  /** Whether a browser page of this origin may read our answers (CORS). */
  allowsOrigin(origin: string): boolean;
}

export function rebindingGuard(boundHost: string, port: number, allowedOrigins: string[] = []): RebindingGuard {
  const names = new Set([...LOOPBACK_NAMES, boundHost.toLowerCase(), boundHost.includes(':') ? `[${boundHost.toLowerCase()}]` : boundHost.toLowerCase()]);
  const hosts = new Set<string>();
  for (const name of names) {
    if (name.includes(':') && !name.startsWith('[')) continue; // bare IPv6 never appears in a Host header
    hosts.add(name);
    hosts.add(`${name}:${port}`);
  }
  const origins = new Set([...hosts].map((h) => `http://${h}`));
  const extra = new Set(allowedOrigins.map((o) => o.replace(/\/+$/, '').toLowerCase()));
  const active = isLoopbackHost(boundHost);
  return {
    check(headers) {
      if (!active) return;
      const host = (headers.host ?? '').toLowerCase();
      if (!hosts.has(host)) {
        throw new RelayError('forbidden_host', `This hub listens on loopback and answers only requests addressed to it by a loopback name (Host: 127.0.0.1:${port} or localhost:${port}), not "${headers.host ?? ''}". Use http://127.0.0.1:${port}/.`);
      }
      const origin = headers.origin;
      if (origin !== undefined && !origins.has(origin.toLowerCase()) && !extra.has(origin.toLowerCase())) {
        throw new RelayError('forbidden_origin', `Requests from the web origin "${origin}" are refused: this hub listens on loopback and trusts only pages served from loopback. An operator can allow an origin with \`serve --http --allow-origin ORIGIN\`.`);
      }
    },
    allowsOrigin(origin) {
      const o = origin.toLowerCase();
      return origins.has(o) || extra.has(o);
    },
  };
}
