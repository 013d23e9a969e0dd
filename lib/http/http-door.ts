/**
 * The HTTP door: what a request that arrived over HTTP may do, given the
 * agent its signature proved (or none). One HttpGate per hub holds the
 * shared budgets — the per-agent append rate (one budget across /mcp and
 * REST), the wait and stream slots — and the signals that end an agent's
 * held sockets when its key is revoked or the hub closes.
 *
 * The MCP tools ask it through the Door interface of lib/mcp/door.ts; REST
 * and SSE ask it directly.
 */
import { setMaxListeners } from 'node:events';
import { RelayError } from '../errors.js';
import type { Admission, Door, Grant, Spend } from '../mcp/door.js';
import { RateLimiter, Slots, type Limits } from './limits.js';

export type Channel = 'mcp' | 'http';

export interface Hold {
  /** Aborts when the client goes away, the agent's key is revoked, or the hub closes. */
  signal: AbortSignal;
  release(): void;
}

const HOW_TO_SIGN = 'Send an `Authorization: PE-HMAC agent=<name>, ts=<unix seconds>, sig=<hex>` header, where sig is the HMAC-SHA256 with your key of the method, ts and the sha256 of the body (docs/http.md shows how; `p-e-relay sign` prints one). Reads (exists, get_relay, list_relays, list_replies and the GET routes) need none.';

export function unsignedRefusal(spends: Spend | null): RelayError {
  const what =
    spends === 'append' ? 'Appending over HTTP must be signed, and this request carried no credential, so nothing was stored.'
    : spends === 'wait' ? 'wait_for_relay over HTTP must be signed, because it holds a connection open, and this request carried no credential.'
    : spends === 'stream' ? 'GET /events must be signed, because it holds a connection open, and this request carried no credential (a browser EventSource may send agent, ts and sig as query parameters).'
    : 'This call over HTTP must be signed, and this request carried no credential.';
  return new RelayError('unsigned', `${what} ${HOW_TO_SIGN}`);
}

export class HttpGate {
  readonly waits: Slots;
  readonly streams: Slots;
  private readonly rate: RateLimiter;
  private readonly agents = new Map<string, AbortController>();
  private readonly hub = new AbortController();

  constructor(private readonly limits: Limits) {
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
    controller?.abort(new RelayError('key_revoked', `The key of agent ${agent} was revoked or replaced while this call was waiting, so the hub ended it. Ask the operator for the current key, then sign a new call with it.`, { reason: 'key_revoked' }));
  }

  /** Ends every wait and stream (the hub is shutting down). */
  close(): void {
    this.hub.abort();
  }

  /** Spends one append from the agent's budget, or throws rate_limited saying when to retry. */
  spendAppend(agent: string): void {
    const waitMs = this.rate.take(agent);
    if (waitMs === 0) return;
    const retryAfterS = Math.max(1, Math.ceil(waitMs / 1000));
    throw new RelayError(
      'rate_limited',
      `Agent ${agent} is appending faster than this hub allows (${this.limits.appendsPerSecond} per second, bursts of ${this.limits.appendBurst}), so nothing was stored; retry in ${retryAfterS} s.`,
      { retryAfterS },
    );
  }

  holdWait(agent: string, closed: AbortSignal): Hold {
    const slot = this.waits.acquire(agent);
    if (slot === 'agent') throw new RelayError('too_many_waits', `Agent ${agent} already has ${this.waits.perAgent} waits open on this hub, the most one agent may hold. Let one end (one wait with after covers many records) and call again.`);
    if (slot === 'total') throw new RelayError('too_many_waits', `This hub is holding as many waits as it allows (${this.waits.limit}); retry in a few seconds.`, { retryAfterS: 5 });
    return this.hold(agent, closed, slot);
  }

  holdStream(agent: string, closed: AbortSignal): Hold {
    const slot = this.streams.acquire(agent);
    if (slot === 'agent') throw new RelayError('too_many_streams', `Agent ${agent} already has ${this.streams.perAgent} event streams open on this hub, the most one agent may hold. Close one (one stream carries every record) and open again.`);
    if (slot === 'total') throw new RelayError('too_many_streams', `This hub is serving as many event streams as it allows (${this.streams.limit}); retry in a few seconds.`, { retryAfterS: 5 });
    return this.hold(agent, closed, slot);
  }

  /** The Door the MCP tools of one request see. `closed` aborts when that request's client goes away. */
  door(agent: string | null, channel: Channel, closed: AbortSignal): Door {
    return {
      transport: 'http',
      authorize: ({ signed, spends }: Admission): Grant => {
        if (agent === null) {
          if (signed) throw unsignedRefusal(spends);
          return { depositedBy: channel, release() {} };
        }
        const depositedBy = `${channel}/${agent}`;
        if (spends === 'append') this.spendAppend(agent);
        if (spends !== 'wait' && spends !== 'stream') return { depositedBy, release() {} };
        const hold = spends === 'wait' ? this.holdWait(agent, closed) : this.holdStream(agent, closed);
        return { depositedBy, release: hold.release, signal: hold.signal };
      },
    };
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
