/**
 * Pushes what is addressed to a named agent into its Claude Code session as
 * it lands (spec §8d, docs/agents.md "Push into an idle session"), so an idle
 * session gets a new turn without polling.
 *
 * What is pushed is exactly what the agent's wait_for_relay without after
 * would return (the agent's default set: to: its name or all, never its own
 * records, from its durable mark), because both read and move the same mark
 * (store.agents): a record pushed is counted delivered, so a later wait does
 * not return it, and one a wait gave is not pushed.
 *
 * Order of a push: the notification is written to stdout first, then the
 * mark moves (durably). A server killed in between pushes or returns the
 * same records once more after its restart, never fewer: at least once, as
 * waits are. Claude Code does not acknowledge notifications, so "written" is
 * all the proof there is: that is why push runs only where the operator or
 * the client said the host reads channels (stdio.ts).
 *
 * Bursts: a record that lands after a quiet spell is pushed at once (after
 * GATHER_MS, so the records of one moment travel together); the next push
 * waits until WINDOW_MS after it, and everything that lands meanwhile goes
 * out then as one notification, capped in size and count
 * (channel-notification.ts). A lone record costs no wait; a flood costs the
 * session a few interrupts, not hundreds.
 */
import { splitRecordFile } from '../../model/deposit.js';
import type { RecordMeta } from '../../model/record-index.js';
import type { Logger } from '../../log.js';
import type { RelayStore, Subscription } from '../../store/store.js';
import { channelNotification, MAX_RECORDS_PER_NOTIFICATION, type ChannelParams, type PushedRecord } from './channel-notification.js';

/** The least time between two pushes: what lands meanwhile goes out together when it ends. */
export const WINDOW_MS = 150;
/** How long the first record after a quiet spell waits for others of the same moment. */
export const GATHER_MS = 5;

export interface ChannelPushOptions {
  store: RelayStore;
  agent: string;
  /** Writes one notification to the client; resolves once it is written. */
  send: (params: ChannelParams) => Promise<void>;
  log: Logger;
  /** A wait of this agent is open in this process: it answers what lands, so nothing is pushed meanwhile. */
  waiting?: () => boolean;
  windowMs?: number;
}

export class ChannelPush {
  private readonly queue = new Map<string, RecordMeta>();
  private subscription: Subscription | null = null;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private closed = false;
  /** When the last notification was written (Date.now()). */
  private lastPush = 0;

  constructor(private readonly options: ChannelPushOptions) {}

  /** Subscribes to what lands, then pushes what was already waiting for the agent. */
  async start(): Promise<void> {
    const { store, agent } = this.options;
    const filter = store.agents.defaultFilter(agent);
    // Listen before reading the backlog, so nothing landing in between is missed; the flush drops what was given meanwhile.
    this.subscription = store.subscribe({ after: null, filter }, (meta) => this.enqueue(meta));
    for (const meta of await store.agents.undelivered(agent)) this.enqueue(meta);
  }

  close(): void {
    this.closed = true;
    this.subscription?.close();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Settles once every push begun so far has been written and marked (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private enqueue(meta: RecordMeta): void {
    if (this.closed) return;
    this.queue.set(meta.id, meta);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.flushing || this.closed || this.queue.size === 0) return;
    // A record after a quiet spell goes out at once (GATHER_MS lets the records of one write land together);
    // one that lands within a window of the last push waits for the window's end, with the rest of its burst.
    const window = this.options.windowMs ?? WINDOW_MS;
    const delay = Math.max(GATHER_MS, this.lastPush + window - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flushing = this.flush()
        .catch((err: unknown) => this.options.log.warn(`channel push for ${this.options.agent}: ${(err as Error).message}; what was not marked comes again`))
        .finally(() => {
          this.flushing = null;
          this.schedule();
        });
    }, delay);
  }

  private async flush(): Promise<void> {
    const { store, agent, send, waiting } = this.options;
    // An open wait takes what lands (and moves the mark on the agent's next call); pushing it too would say it twice.
    if (waiting?.()) return void this.queue.clear();
    const isUndelivered = await store.agents.matcher(agent);
    const due = [...this.queue.values()]
      .filter((meta) => {
        const n = store.shape.parse(meta.id);
        return n !== null && isUndelivered(meta, n);
      })
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .slice(0, MAX_RECORDS_PER_NOTIFICATION);
    this.queue.clear();
    if (due.length === 0 || this.closed) return;
    const ids = due.map((meta) => meta.id);
    // Claimed before the write, so a wait in this process cannot hand them out while the mark is being written.
    const release = store.agents.claim(agent, ids);
    try {
      const records = await Promise.all(due.map((meta) => this.withBytes(meta)));
      await send(channelNotification(agent, records));
      this.lastPush = Date.now();
      await store.agents.deliver(agent, null, ids);
    } finally {
      release();
    }
    // A burst longer than one notification: the rest is still undelivered, and comes in the next one.
    if (due.length === MAX_RECORDS_PER_NOTIFICATION) for (const meta of await store.agents.undelivered(agent)) this.queue.set(meta.id, meta);
  }

  private async withBytes(meta: RecordMeta): Promise<PushedRecord> {
    try {
      return { meta, bytes: splitRecordFile(await this.options.store.read(meta.id)).record.toString('utf8') };
    } catch {
      return { meta, bytes: null }; // vanished or damaged since it was indexed: the notification names it, get_relay says which
    }
  }
}
