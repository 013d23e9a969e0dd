/**
 * The hub's routes, written once: what each path is, the pattern REST's
 * handler matches, and the list the no_route refusal names. docs/http.md
 * describes each in full.
 *
 *   GET  /                      the web view (its files under /assets/)
 *   POST /mcp                   MCP, stateless Streamable HTTP
 *   GET  /events                every record as it lands (SSE, signed); takes the filters too
 *   GET  /relays[?after=ID]     list (text: the two lines of list_relays); filters
 *                               ?to=…&from=…&kind=… (repeatable) &replies_to=ID
 *   POST /relays[?id=ID]        signed append; 201 with the id (200 when an
 *                               Idempotency-Key repeats: the earlier record)
 *   GET  /relays/ID             the exact stored bytes, or 404 naming the state
 *   HEAD /relays/ID             the state in P-E-Relay-State, no body
 *   GET  /relays/ID/replies     list_replies
 *   GET  /agents                the roster (JSON): who is there, last seen, waiting now
 *   GET  /healthz, GET /metrics
 */
import { RelayError } from '../errors.js';

interface Route {
  /** How the no_route sentence names it. */
  readonly shown: string;
  /** For a REST route (lib/http/rest.ts): the paths it answers, a capture group holding the id. */
  readonly rest?: RegExp;
}

export const ROUTES = {
  web: { shown: 'the web view at GET /' },
  mcp: { shown: 'POST /mcp' },
  events: { shown: 'GET /events' },
  relays: { shown: '/relays', rest: /^\/relays$/ },
  record: { shown: '/relays/ID', rest: /^\/relays\/([^/]+)$/ },
  replies: { shown: '/relays/ID/replies', rest: /^\/relays\/([^/]+)\/replies$/ },
  agents: { shown: '/agents', rest: /^\/agents$/ },
  healthz: { shown: '/healthz', rest: /^\/healthz$/ },
  metrics: { shown: '/metrics', rest: /^\/metrics$/ },
} as const satisfies Record<string, Route>;

const firstSegment = (path: string) => `/${path.split('/')[1] ?? ''}`;
const REST_ROOTS = new Set(Object.values(ROUTES as Record<string, Route>).filter((route) => route.rest).map((route) => firstSegment(route.shown)));

/** A path under one of REST's routes (a credential sent with a read there is checked before the route is looked up). */
export function isRestPath(path: string): boolean {
  return REST_ROOTS.has(firstSegment(path));
}

export function noRoute(path: string): RelayError {
  const shown = Object.values(ROUTES).map((route) => route.shown);
  return new RelayError('no_route', `There is nothing at ${path}. The hub serves ${shown.slice(0, -1).join(', ')} and ${shown.at(-1)} (docs/http.md).`);
}
