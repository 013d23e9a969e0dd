/**
 * The hub's routes, written once: one row per route with its path, its
 * handler per method, and how each method's request is taken in: whether it
 * must be signed, what it spends, whether a good signature is spent
 * (intake.ts). The hub (dispatch.ts) reads the body and checks the
 * credential once, as the row says, and the no_route refusal names every
 * row. docs/http.md describes each in full.
 *
 *   GET  /                      the web view (its files under /assets/)
 *   POST /mcp                   MCP, stateless Streamable HTTP
 *   GET  /events                every record as it lands (SSE, signed); takes the filters too
 *   GET  /relays[?after=ID]     list (text: the two lines of list_relays); takes the
 *                               filters as query parameters (filter-query.ts)
 *   POST /relays[?id=ID]        signed append; 201 with the id (200 when an
 *                               Idempotency-Key repeats: the earlier record)
 *   GET  /relays/ID             the exact stored bytes, or 404 naming the state
 *   HEAD /relays/ID             the state in P-E-Relay-State, no body
 *   GET  /relays/ID/replies     list_replies
 *   GET  /agents                the roster (JSON): who is there, last seen, waiting now
 *   GET  /claims                live work claims (JSON): holder, targets, claim id, lapse
 *   GET  /checkpoints, GET /healthz, GET /metrics
 */
import { RelayError } from '../errors.js';
import type { Admission, Channel } from '../doors/door.js';
import { appendRelay } from '../mcp/tools/append-relay.js';
import { parseJsonRpcBody } from './body.js';
import type { Handler, HubRequest } from './context.js';
import { READ_INTAKE, spending, type Entry } from './intake.js';
import { handleMcp, mcpIntake, mcpMethodNotAllowed } from './mcp-endpoint.js';
import { getAgents, getClaims, getHealthz, getMetrics, getRecord, getRelays, getReplies, headRecord, methodNotAllowed, postRelays } from './rest.js';
import { handleEvents } from './sse.js';
import { checkpointFrontier } from './checkpoints-route.js';
import { handleWeb } from './web-view.js';

export interface Route {
  /** How the no_route sentence names it. */
  readonly shown: string;
  /** The paths it answers; a capture group holds a record's id. */
  readonly path: RegExp;
  /** The first part of what it deposits (`mcp`, `http`) and the door its metrics count. */
  readonly channel: Channel;
  /** The methods it answers, each taken in and handled as its entry says. */
  readonly methods: Readonly<Record<string, Entry>>;
  /** Any other method: refused before the body is read or the credential looked at, or (an entry) taken in and handled. */
  readonly otherMethods: Entry | ((path: string) => RelayError);
}

/** A read: a credential sent along is checked (a wrong one is a 401), never spent. */
const read = (handle: Handler): Entry => ({ intake: READ_INTAKE, handle });

/** REST's appends: the same door facts as append_relay (signed, one append from the agent's rate); the body is the record. */
const APPEND: Entry = { intake: spending(appendRelay.door, { bodyIsRecord: true }), handle: postRelays };

/** A stream holds a connection open: signed (by header, or agent/ts/sig query parameters for EventSource), a stream slot while it lasts. */
const EVENT_STREAM: Admission = { signed: true, spends: 'stream' };

const REST_READS_ONLY = (path: string) => methodNotAllowed(path, 'GET, HEAD');

export const ROUTES = {
  web: { shown: 'the web view at GET /', path: /^\/$|^\/assets\//, channel: 'http', methods: {}, otherMethods: read(handleWeb) },
  mcp: {
    shown: 'POST /mcp',
    path: /^\/mcp$/,
    channel: 'mcp',
    // The intake is the message's: its body is decoded strictly before any SDK sees it, and its tool's door facts say what it spends.
    methods: { POST: { decode: parseJsonRpcBody, intakeOf: mcpIntake, handle: handleMcp } },
    otherMethods: read(mcpMethodNotAllowed),
  },
  events: {
    shown: 'GET /events',
    path: /^\/events$/,
    channel: 'http',
    methods: { GET: { intake: spending(EVENT_STREAM, { inQuery: true }), handle: handleEvents } },
    otherMethods: () => new RelayError('method_not_allowed', '/events answers GET only: it is an event stream.', { allow: 'GET' }),
  },
  relays: {
    shown: '/relays',
    path: /^\/relays$/,
    channel: 'http',
    methods: { GET: read(getRelays), HEAD: read(getRelays), POST: APPEND },
    otherMethods: (path) => methodNotAllowed(path, 'GET, HEAD, POST'),
  },
  record: { shown: '/relays/ID', path: /^\/relays\/([^/]+)$/, channel: 'http', methods: { GET: read(getRecord), HEAD: read(headRecord) }, otherMethods: REST_READS_ONLY },
  replies: { shown: '/relays/ID/replies', path: /^\/relays\/([^/]+)\/replies$/, channel: 'http', methods: { GET: read(getReplies), HEAD: read(getReplies) }, otherMethods: REST_READS_ONLY },
  agents: { shown: '/agents', path: /^\/agents$/, channel: 'http', methods: { GET: read(getAgents), HEAD: read(getAgents) }, otherMethods: REST_READS_ONLY },
  claims: { shown: '/claims', path: /^\/claims$/, channel: 'http', methods: { GET: read(getClaims), HEAD: read(getClaims) }, otherMethods: REST_READS_ONLY },
  checkpoints: { shown: '/checkpoints', path: /^\/checkpoints$/, channel: 'http', methods: { GET: read(checkpointFrontier), HEAD: read(checkpointFrontier) }, otherMethods: REST_READS_ONLY },
  healthz: { shown: '/healthz', path: /^\/healthz$/, channel: 'http', methods: { GET: read(getHealthz), HEAD: read(getHealthz) }, otherMethods: REST_READS_ONLY },
  metrics: { shown: '/metrics', path: /^\/metrics$/, channel: 'http', methods: { GET: read(getMetrics), HEAD: read(getMetrics) }, otherMethods: REST_READS_ONLY },
} as const satisfies Record<string, Route>;

export function noRoute(path: string): RelayError {
  const shown = Object.values(ROUTES).map((route) => route.shown);
  return new RelayError('no_route', `There is nothing at ${path}. The hub serves ${shown.slice(0, -1).join(', ')} and ${shown.at(-1)} (docs/http.md).`);
}

/** Every other path: a credential sent along is checked, never spent, and then the path is refused no_route. */
const NOWHERE: Route = {
  shown: 'nothing',
  path: /^/,
  channel: 'http',
  methods: {},
  otherMethods: read(({ req, url }: HubRequest) => {
    req.resume();
    throw noRoute(url.pathname);
  }),
};

/** The route of a path, with the path's captures. */
export function routeOf(path: string): { route: Route; match: RegExpExecArray } {
  for (const route of Object.values(ROUTES) as Route[]) {
    const match = route.path.exec(path);
    if (match) return { route, match };
  }
  return { route: NOWHERE, match: NOWHERE.path.exec(path)! };
}

/** What a method of a route is: its entry, or the refusal of a method the route does not answer. */
export function entryOf(route: Route, method: string, path: string): Entry {
  if (Object.hasOwn(route.methods, method)) return route.methods[method]!;
  if (typeof route.otherMethods === 'function') throw route.otherMethods(path);
  return route.otherMethods;
}
