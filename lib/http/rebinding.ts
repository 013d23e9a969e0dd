/**
 * DNS rebinding protection for a hub bound to loopback. A web page on
 * evil.example can make its own name resolve to 127.0.0.1 and have the
 * victim's browser talk to the hub; the browser still sends `Host:
 * evil.example` and `Origin: http://evil.example`, which is what we check.
 *
 * On loopback the Host must name a loopback address (localhost, 127.0.0.1,
 * [::1], or the bound address as spelled or as the kernel reports it), with
 * our port or none, and an Origin, when sent, must be such a loopback origin
 * or one the operator allowed. A hub bound to another interface is reached
 * by names we cannot know, so the check is off there and signatures carry
 * the weight (docs/security.md).
 *
 * Whether the hub is on loopback is decided by the address it is bound to,
 * never by how the operator spelled it: `0:0:0:0:0:0:0:1`,
 * `::ffff:127.0.0.1` and `127.1` are loopback as much as `::1` and
 * `127.0.0.1` (an exact-string match turned the check off for them).
 */
import { BlockList, isIP } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { RelayError } from '../errors.js';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6'); // BlockList also matches ::ffff:127.x.y.z against the IPv4 rule

/** Whether an IP address (as a listening socket reports it) is a loopback one. */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && LOOPBACK.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * A Host value (or an origin's host) that names a loopback address by its IP
 * literal, in any spelling (`[::ffff:7f00:1]`, `127.0.0.2`), with our port or
 * none. No DNS name is involved, so no rebinding can be.
 */
function isLoopbackLiteral(host: string, port: number): boolean {
  const m = /^\[([0-9a-f:.]+)\](?::(\d+))?$/.exec(host) ?? /^([0-9.]+)(?::(\d+))?$/.exec(host);
  if (!m || (m[2] !== undefined && Number(m[2]) !== port)) return false;
  return isLoopbackAddress(m[1]!);
}

export interface RebindingGuard {
  /** Throws forbidden_host or forbidden_origin for a request that does not come from a local origin. */
  check(headers: IncomingHttpHeaders): void;
  /** Whether a browser page of this origin may read our answers (CORS). */
  allowsOrigin(origin: string): boolean;
}

/** `boundAddress` is the address the socket listens on (server.address()); it decides whether the check is on. */
export function rebindingGuard(boundHost: string, port: number, allowedOrigins: string[] = [], boundAddress: string = boundHost): RebindingGuard {
  const names = new Set(LOOPBACK_NAMES);
  for (const spelling of [boundHost, boundAddress]) {
    const name = spelling.toLowerCase();
    names.add(name.includes(':') ? `[${name}]` : name);
  }
  const hosts = new Set<string>();
  for (const name of names) {
    if (name.includes(':') && !name.startsWith('[')) continue; // bare IPv6 never appears in a Host header
    hosts.add(name);
    hosts.add(`${name}:${port}`);
  }
  const origins = new Set([...hosts].map((h) => `http://${h}`));
  const extra = new Set(allowedOrigins.map((o) => o.replace(/\/+$/, '').toLowerCase()));
  const active = isLoopbackAddress(boundAddress);
  const allowsOrigin = (origin: string): boolean => {
    const o = origin.toLowerCase();
    return origins.has(o) || extra.has(o) || (o.startsWith('http://') && isLoopbackLiteral(o.slice('http://'.length), port));
  };
  return {
    check(headers) {
      if (!active) return;
      const host = (headers.host ?? '').toLowerCase();
      if (!hosts.has(host) && !isLoopbackLiteral(host, port)) {
        throw new RelayError('forbidden_host', `This hub listens on loopback and answers only requests addressed to ` +
          `it by a loopback name (Host: 127.0.0.1:${port} or localhost:${port}), not "${headers.host ?? ''}". ` +
          `Use http://127.0.0.1:${port}/.`);
      }
      const origin = headers.origin;
      if (origin !== undefined && !allowsOrigin(origin)) {
        throw new RelayError('forbidden_origin', `Requests from the web origin "${origin}" are refused: this hub ` +
          `listens on loopback and trusts only pages served from loopback. ` +
          `An operator can allow an origin with \`serve --http --allow-origin ORIGIN\`.`);
      }
    },
    allowsOrigin,
  };
}
