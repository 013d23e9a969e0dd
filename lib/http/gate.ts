/**
 * The HTTP hub's budget, shared by every route: the per-agent append rate
 * (one budget across /mcp and REST), the wait and stream slots, and the
 * signals that end an agent's held sockets when its key is revoked or the
 * hub closes. One HttpGate per hub. Every request's Door is opened here,
 * once, as its route's row says (`open`, called by intake.ts: the
 * credential checked, the client's going away wired to the door), and the
 * Door (lib/doors/door.ts) decides; nothing else spends this budget.
 */
import { setMaxListeners } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RelayError } from '../errors.js';
import type { Verifier } from '../auth/verify.js';
import { Door, type Appender, type Channel, type Budget, type Hold, type SignedRequest, type Spend } from '../doors/door.js';
import { authenticate } from './authenticate.js';
import { heldForAgent } from './connection-slots.js';
import { RateLimiter, Slots, type Limits } from './limits.js';
import type { HubMetrics } from './metrics.js';

export type { Channel, Hold };

/** What a route reads of an append's request besides the MCP headers (mcp-*): sent on with it by a replica. */
const FORWARDED_HEADERS = new Set(['authorization', 'content-type', 'accept', 'idempotency-key']);

export class HttpGate implements Budget {
  readonly waits: Slots;
  readonly streams: Slots;
  private readonly rate: RateLimiter;
  private readonly agents = new Map<string, AbortController>();
  private readonly hub = new AbortController();

  /** `readOnly`: the refusal every append gets on a read-only mirror (null on a primary). */
  constructor(
    private readonly limits: Limits,
    private readonly verifier: Verifier,
    private readonly metrics: HubMetrics,
    private readonly readOnly: RelayError | null = null,
    /** The largest record an append over HTTP may carry (body.ts). */
    private readonly recordCap?: number,
    /** A replica's: where every append goes instead of the store (lib/replica/), as the client's own signed request. */
    private readonly forwardAppends?: Appender,
  ) {
    // Every held wait and stream listens on the hub's signal (and its agent's):
    // hundreds of listeners are the design, not a leak.
    setMaxListeners(0, this.hub.signal);
    this.waits = new Slots(limits.waitsPerAgent, limits.waits);
    this.streams = new Slots(limits.streamsPerAgent, limits.streams);
    this.rate = new RateLimiter(limits.appendsPerSecond, limits.appendBurst);
  }

  /** The agent's key is gone or replaced: end everything it holds open. */
  revoke(agent: string): void {
    const controller = this.agents.get(agent);
    this.agents.delete(agent);
    // The reason travels with the abort, so a wait it ends can say why instead of answering "nothing new".
    controller?.abort(new RelayError('key_revoked',
      `The key of agent ${agent} was revoked or replaced while this call was waiting, so the hub ended it. ` +
      `Ask the operator for the current key, then sign a new call with it.`, { reason: 'key_revoked' }));
  }

  /** Ends every wait and stream (the hub is shutting down). */
  close(): void {
    this.hub.abort();
  }

  /** Spends one append from the agent's budget, or throws rate_limited saying when to retry. */
  private spendAppend(agent: string): void {
    const waitMs = this.rate.take(agent);
    if (waitMs === 0) return;
    const retryAfterS = Math.max(1, Math.ceil(waitMs / 1000));
    throw new RelayError(
      'rate_limited',
      `Agent ${agent} is appending faster than this hub allows (${this.limits.appendsPerSecond} per second, bursts of ${this.limits.appendBurst}), so nothing was stored; retry in ${retryAfterS} s.`,
      { retryAfterS },
    );
  }

  private holdWait(agent: string, closed: AbortSignal): Hold {
    const slot = this.waits.acquire(agent);
    if (slot === 'agent') throw new RelayError('too_many_waits',
      `Agent ${agent} already has ${this.waits.perAgent} waits open on this hub, the most one agent may hold. ` +
      `Let one end (one wait with after covers many records) and call again.`);
    if (slot === 'total') throw new RelayError('too_many_waits', `This hub is holding as many waits as it allows (${this.waits.limit}); retry in a few seconds.`, { retryAfterS: 5 });
    return this.hold(agent, closed, slot);
  }

  private holdStream(agent: string, closed: AbortSignal): Hold {
    const slot = this.streams.acquire(agent);
    if (slot === 'agent') throw new RelayError('too_many_streams',
      `Agent ${agent} already has ${this.streams.perAgent} event streams open on this hub, ` +
      `the most one agent may hold. Close one (one stream carries every record) and open again.`);
    if (slot === 'total') throw new RelayError('too_many_streams', `This hub is serving as many event streams as it allows (${this.streams.limit}); retry in a few seconds.`, { retryAfterS: 5 });
    return this.hold(agent, closed, slot);
  }

  /**
   * The door of one request: its credential checked (a wrong one is a 401
   * before anything runs; none is not an error, the door refuses what needs
   * one), and its held calls ended when the client goes away. `allowQuery`
   * takes agent/ts/sig from the query for browser EventSource; `spend` says
   * whether a good signature is spent in the one-time guard (only a request
   * that buys something spends it, so signed reads cannot fill the guard).
   * `appends`: the request is an append; on a read-only mirror it is refused
   * read_only without its credential being looked at, since a mirror need
   * not hold the agents' keys to say it stores nothing.
   */
  async open(req: IncomingMessage, res: ServerResponse, url: URL, body: Uint8Array, channel: Channel, { allowQuery = false, spend = true, appends = false } = {}): Promise<Door> {
    if (appends && this.readOnly) return new Door({ channel, agent: null, budget: this, refuseAppends: this.readOnly });
    const agent = await authenticate(req, url, body, this.verifier, allowQuery, spend);
    if (agent !== null) heldForAgent(req.socket);
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    return new Door({ channel, agent, closed: gone.signal, budget: this, maxRecordBytes: this.recordCap, forwardAppends: this.forwarder(req, url, body, agent) });
  }

  /**
   * A replica's appends for this request. A signed one goes on to the
   * primary as the client's own request (the same route, headers and
   * body), not signed anew: the primary's guard then spends the client's
   * signature, so one captured request replayed at another replica or at
   * the primary itself is refused there (replayed_signature), and each
   * client request is its own (docs/security.md).
   */
  private forwarder(req: IncomingMessage, url: URL, body: Uint8Array, agent: string | null): Appender | undefined {
    const forward = this.forwardAppends;
    if (!forward || agent === null) return forward;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && (FORWARDED_HEADERS.has(name) || name.startsWith('mcp-'))) headers[name] = value;
    }
    const signed: SignedRequest = { target: url.pathname + url.search, headers, body };
    return (bytes, options) => forward(bytes, options, signed);
  }

  spend(agent: string, spends: Spend, closed: AbortSignal): Hold | null {
    if (spends === 'append') {
      this.spendAppend(agent);
      return null;
    }
    return spends === 'wait' ? this.holdWait(agent, closed) : this.holdStream(agent, closed);
  }

  appended(channel: Channel): void {
    this.metrics.appended(channel);
  }

  refused(code: string): void {
    this.metrics.refused(code);
  }

  private hold(agent: string, closed: AbortSignal, releaseSlot: () => void): Hold {
    let controller = this.agents.get(agent);
    if (!controller) {
      controller = new AbortController();
      setMaxListeners(0, controller.signal);
      this.agents.set(agent, controller);
    }
    const link = linkedSignal([closed, controller.signal, this.hub.signal]);
    return {
      signal: link.signal,
      release: () => {
        link.dispose();
        releaseSlot();
      },
    };
  }
}

/**
 * A signal that aborts when any source does. Written out rather than
 * AbortSignal.any so the listeners on the long-lived sources (the agent's,
 * the hub's) are removed when the hold ends, not left to the collector.
 */
function linkedSignal(sources: AbortSignal[]): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const abort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
  for (const source of sources) {
    if (source.aborted) controller.abort(source.reason);
    else source.addEventListener('abort', abort, { once: true });
  }
  return { signal: controller.signal, dispose: () => sources.forEach((s) => s.removeEventListener('abort', abort)) };
}
