/**
 * GET /events: every record this hub indexes, as it lands, one SSE event
 * each (`id: relay-NNNN`, `event: relay`, `data:` the `appeared` shape of
 * wait_for_relay). Signed like a wait, by header or by agent/ts/sig query
 * parameters for browser EventSource.
 *
 * Filters (spec §8a, as query parameters: filter-query.ts) are matched by the
 * store's index: a record that does not match is never queued for this stream.
 *
 * Resume with Last-Event-ID (preferred when both are sent) or ?after=: the
 * held records after the mark first, then live ones, through the store's one
 * subscription API (store/follow/subscription.ts), which sends what both phases see
 * once.
 *
 * The catch-up from an old mark (a million held records, say) is streamed,
 * not built: the store hands it over in batches from its index, events are
 * written CATCH_UP_WRITE bytes at a time (one write per event cost more
 * CPU in writev than everything else the stream does), and a socket that
 * takes no more holds the catch-up back until it drains.
 *
 * A slow reader never holds anyone else up: the store's notify only queues
 * a string here. A stream whose unsent bytes pass the cap, or that makes no
 * progress for a whole keep-alive interval with bytes pending, is dropped;
 * the client reopens with a fresh signature and ?after= its last id.
 */
import type { ServerResponse } from 'node:http';
import type { RecordFilter } from '../model/filter.js';
import type { RecordMeta } from '../model/record-index.js';
import { appeared, type Subscription } from '../store/store.js';
import type { Grant } from '../doors/door.js';
import { filterFromQuery } from './filter-query.js';
import type { HubContext, HubRequest } from './context.js';

/** Catch-up events are written in chunks of about this many bytes (~50 events: a socket's highWaterMark). */
const CATCH_UP_WRITE = 16 * 1024;

/** GET /events, taken in signed (by header or query parameters) and spending a stream slot, as its row says (routes.ts). */
export async function handleEvents({ req, res, url, ctx, door, facts }: HubRequest): Promise<void> {
  const grant = door.authorize(facts);
  let mark: number | null;
  let filter: RecordFilter | null;
  try {
    const markText = req.headers['last-event-id'] ?? url.searchParams.get('after') ?? undefined;
    mark = markText === undefined ? null : await ctx.store.markOf(String(markText));
    filter = filterFromQuery(url.searchParams, ctx.store.shape);
  } catch (err) {
    grant.release();
    throw err;
  }
  new EventStream(res, ctx, grant, filter).start(mark);
}

export function eventText(meta: RecordMeta): string {
  return `id: ${meta.id}\nevent: relay\ndata: ${JSON.stringify(appeared(meta))}\n\n`;
}

class EventStream {
  /** Bytes of live events held back while the catch-up is being sent. */
  private heldBytes = 0;
  private ended = false;
  private subscription: Subscription | null = null;
  private keepAlive: NodeJS.Timeout | null = null;
  /** Bytes the socket had handed to the kernel at the last keep-alive tick. */
  private lastDispatched = -1;
  /** Catch-up events not yet written: they go out CATCH_UP_WRITE bytes at a time, and before any live one. */
  private pending = '';

  constructor(
    private readonly res: ServerResponse,
    private readonly ctx: HubContext,
    private readonly hold: Grant,
    private readonly filter: RecordFilter | null,
  ) {}

  start(mark: number | null): void {
    const { res, ctx } = this;
    try {
      // Live events come in landing order, a mirror's late fill-in below the mark included (docs/http.md).
      this.subscription = ctx.store.subscribe(
        { after: mark, filter: this.filter, onHeld: (meta) => this.held(meta), onClosed: () => this.end() },
        (meta, _n, phase) => (phase === 'catch-up' ? this.catchUp(meta) : this.send(eventText(meta))),
      );
    } catch (err) {
      this.hold.release(); // the store has closed: refused before the stream began
      throw err;
    }
    this.hold.signal?.addEventListener('abort', () => this.end(), { once: true });
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no', Connection: 'keep-alive' });
    res.write(': p-e-relay events\n\n');
    this.keepAlive = setInterval(() => this.tick(), ctx.sseKeepAliveMs);
    void this.subscription.caughtUp.then(() => this.flush(), (err) => {
      ctx.log.warn(`an event stream's catch-up failed: ${(err as Error).message}`);
      this.end();
    });
  }

  /** One held record of the catch-up; a full socket holds the catch-up back until it drains. */
  private catchUp(meta: RecordMeta): Promise<void> | void {
    this.pending += eventText(meta);
    if (this.pending.length >= CATCH_UP_WRITE) return this.flush();
  }

  /** Writes the catch-up's pending events; a promise when the socket is full. */
  private flush(): Promise<void> | void {
    if (this.pending === '' || this.ended) return;
    const text = this.pending;
    this.pending = '';
    if (!this.res.write(text)) return this.drained();
  }

  private held(meta: RecordMeta): void {
    this.heldBytes += eventText(meta).length;
    if (this.heldBytes > this.ctx.sseMaxBufferedBytes) this.drop('its catch-up fell too far behind');
  }

  private send(text: string): void {
    void this.flush(); // the catch-up's last events go first
    this.res.write(text);
    if (this.res.writableLength > this.ctx.sseMaxBufferedBytes) this.drop(`${this.res.writableLength} bytes are waiting for it`);
  }

  /** Resolves when the socket takes more, or drops the stream if it stalls for a keep-alive interval. */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.drop('it stopped reading during the catch-up');
        resolve();
      }, this.ctx.sseKeepAliveMs);
      // Whichever comes first; the other listener goes too, or every full socket of a long catch-up leaves one behind.
      const done = () => {
        clearTimeout(timer);
        this.res.off('drain', done).off('close', done);
        resolve();
      };
      this.res.once('drain', done).once('close', done);
    });
  }

  private tick(): void {
    const socket = this.res.socket;
    const dispatched = socket ? socket.bytesWritten - socket.writableLength : 0;
    if (this.res.writableLength > 0 && dispatched === this.lastDispatched) return this.drop('it read nothing for a whole keep-alive interval');
    this.lastDispatched = dispatched;
    this.res.write(': keep-alive\n\n');
  }

  private drop(why: string): void {
    if (this.ended) return;
    this.ctx.log.info(`dropped a slow event subscriber: ${why}`);
    this.ctx.metrics.droppedSubscriber();
    this.end();
    this.res.destroy();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.subscription?.close();
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.hold.release();
    if (!this.res.destroyed) this.res.end();
  }
}
