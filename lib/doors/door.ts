/**
 * The door every call comes through: the MCP tools over stdio and over
 * /mcp, REST's append and the SSE stream alike. A call states what it needs
 * (its door facts: signed or not, what it spends); the door checks and takes
 * that, labels what the call deposits (`mcp`, `mcp/<agent>`, `http/<agent>`),
 * and counts appends stored and refusals given. Over stdio there is no hub:
 * the caller is the process's own user, nothing is signed, spent or counted.
 * Over HTTP the hub's budget (lib/http/gate.ts) is shared by every route,
 * so a rule written here holds on every door.
 */
import { RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AppendOptions, AppendResult, RelayStore } from '../store/store.js';

/** What stores an append: the store's own append, or one that sends it elsewhere (a replica's, to its primary: lib/replica/). */
export type Appender = (bytes: Uint8Array, options: AppendOptions, signed?: SignedRequest) => Promise<AppendResult>;

/**
 * The client's own signed HTTP request that carried an append, as it came:
 * a replica sends it on to the same route of its primary unchanged, so the
 * primary's one-time guard spends the client's signature (lib/replica/).
 */
export interface SignedRequest {
  /** The path and query it was sent to (`/mcp`, `/relays?id=…`). */
  target: string;
  /** The headers the route reads (Authorization, Idempotency-Key, the MCP ones), lower-case names. */
  headers: Record<string, string>;
  /** The exact body bytes the signature covers. */
  body: Uint8Array;
}

/** A replica's way to its primary: where its appends go, and its connections there, closed with the server. */
export interface Forwarder {
  append: Appender;
  close(): Promise<void>;
}

/**
 * A server that forwards its appends (serve --forward): the primary it
 * names, and the forwarder for the store it serves. The CLI makes it
 * (lib/replica/), so no door loads the replica, or the bridge's hub client
 * under it, unless it forwards.
 */
export interface Forwarding {
  /** The primary's address, as the server's banner names it. */
  readonly primary: string;
  forwarderFor(store: RelayStore, log: Logger): Forwarder;
}

/** What a call takes from a hub's budget: one append from its agent's rate, or a wait or stream slot held until it ends. */
export type Spend = 'append' | 'wait' | 'stream';

/** What a door must check and take before a call runs. */
export interface Admission {
  /** Over HTTP, refused unless the request's signature was verified. */
  readonly signed: boolean;
  readonly spends: Spend | null;
}

/** A wait or stream slot held for a call. */
export interface Hold {
  /** Aborts when the client goes away, the agent's key is revoked, or the hub closes. */
  signal: AbortSignal;
  release(): void;
}

export interface Grant {
  /** The deposited-by label for an append: `<channel>`, or `<channel>/<agent>` when a signature was verified. */
  depositedBy: string;
  /** The agent this call comes from (spec §8d): the signing agent, or a named stdio server's; null when unnamed. */
  agent: string | null;
  /** Gives back whatever the grant held (a wait or stream slot). Safe to call twice. */
  release(): void;
  /** For a call that holds a slot: aborts when the door closes under it (client gone, key revoked, session over). */
  signal?: AbortSignal;
  /** Counts a record this call stored (not one an idempotency key answered from an earlier call). */
  stored(): void;
  /** The largest record this door takes, in its own bytes, where it is less than the store's (the HTTP record cap). */
  maxRecordBytes?: number;
  /** An append's: where it goes instead of the store's own append (DoorOptions.forwardAppends). */
  append?: Appender;
}

/** `mcp` for both MCP doors, `http` for REST and SSE: the first part of the deposited-by label and the metrics' door. */
export type Channel = 'mcp' | 'http';

/** The HTTP hub's side of a door: its budget, shared by every route, and its counters. */
export interface Budget {
  /** Takes what `spends` costs from the agent's budget, holding a slot for a wait or stream, or throws a RelayError. */
  spend(agent: string, spends: Spend, closed: AbortSignal): Hold | null;
  appended(channel: Channel): void;
  refused(code: string): void;
}

export interface DoorOptions {
  channel: Channel;
  /** The agent whose signature was verified, or (with `stated`) the one a named stdio server serves; null when unnamed. */
  agent: string | null;
  /** The name was stated by the operator (serve --agent), not verified: deposited-by stays the bare channel. */
  stated?: boolean;
  /** Aborts when the caller goes away or its session ends; every held call ends with it. */
  closed?: AbortSignal;
  /** The hub's budget that calls spend; absent over stdio. */
  budget?: Budget;
  /** Every append through this door is refused so, before anything else (a read-only mirror). */
  refuseAppends?: RelayError;
  /** Every append through this door is stored by this instead of the store (a replica forwarding to its primary). */
  forwardAppends?: Appender;
  /** The largest record an append through this door may carry (the HTTP record cap). */
  maxRecordBytes?: number;
}

/**
 * The HTTP doors' record cap unless the hub is told otherwise (--record-cap):
 * the largest record over HTTP, in its own bytes. The bridge states it in
 * the tool list it serves before it has reached a hub.
 */
export const DEFAULT_RECORD_CAP = 65_536;

const HOW_TO_SIGN = 'Send an `Authorization: PE-HMAC agent=<name>, ts=<unix seconds>, sig=<hex>` header, ' +
  'where sig is the HMAC-SHA256 with your key of the method, ts and the sha256 of the body (docs/http.md shows how; ' +
  '`p-e-relay sign` prints one). An MCP client that cannot add that header (one behind an ordinary proxy such as ' +
  'mcp-remote) can run `p-e-relay bridge --url <this hub> --agent <name>` as its server instead: a local stdio server ' +
  'that signs each call with the agent\'s key (docs/bridge.md). ' +
  'Reads (exists, get_relay, list_relays, list_replies and the GET routes) need none.';

export function unsignedRefusal(spends: Spend | null): RelayError {
  const what =
    spends === 'append' ? 'Appending over HTTP must be signed, and this request carried no credential, so nothing was stored.'
    : spends === 'wait' ? 'wait_for_relay over HTTP must be signed, because it holds a connection open, and this request carried no credential.'
    : spends === 'stream' ? 'GET /events must be signed, because it holds a connection open, ' +
      'and this request carried no credential (a browser EventSource may send agent, ts and sig as query parameters).'
    : 'This call over HTTP must be signed, and this request carried no credential.';
  return new RelayError('unsigned', `${what} ${HOW_TO_SIGN}`);
}

const never = new AbortController().signal;

export class Door {
  constructor(private readonly options: DoorOptions) {}

  /** The agent whose signature this door verified (or a named stdio server's); null when none was. */
  get agent(): string | null {
    return this.options.agent;
  }

  /** Grants a call with these needs, or throws a RelayError saying what to send instead. */
  authorize({ signed, spends }: Admission): Grant {
    const { channel, agent, closed = never, budget, stated = false, refuseAppends } = this.options;
    if (spends === 'append' && refuseAppends) throw refuseAppends;
    const depositedBy = agent === null || stated ? channel : `${channel}/${agent}`;
    const stored = () => budget?.appended(channel);
    const forward = spends === 'append' ? this.options.forwardAppends : undefined;
    if (!budget) return { depositedBy, agent, release() {}, stored, signal: spends === 'wait' || spends === 'stream' ? closed : undefined, append: forward };
    if (agent === null) {
      if (signed) throw unsignedRefusal(spends);
      return { depositedBy, agent, release() {}, stored };
    }
    const hold = spends === null ? null : budget.spend(agent, spends, closed);
    const limits = { ...(this.options.maxRecordBytes === undefined ? {} : { maxRecordBytes: this.options.maxRecordBytes }), ...(forward ? { append: forward } : {}) };
    return hold ? { depositedBy, agent, release: hold.release, signal: hold.signal, stored, ...limits } : { depositedBy, agent, release() {}, stored, ...limits };
  }

  /** Runs one call through the door: authorizes it, runs `body` with the grant, and gives back what it held. */
  async run<T>(needs: Admission, body: (grant: Grant) => Promise<T>): Promise<T> {
    const grant = this.authorize(needs);
    try {
      return await body(grant);
    } finally {
      grant.release();
    }
  }

  /** Counts a refusal answered as a tool result. */
  refused(code: string): void {
    this.options.budget?.refused(code);
  }
}

/** Pooled servers serve one request at a time; the HTTP door swaps `current` per request (null between requests). */
export interface DoorRef {
  current: Door | null;
}
