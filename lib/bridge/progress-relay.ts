/**
 * Keeping a long call alive for the client that spawned the bridge.
 *
 * MCP clients give up on a request after 60 s by default unless progress
 * notifications reset the clock. The hub sends one every ~10 s while a
 * wait blocks (when asked with a progress token over an event stream); the
 * bridge passes each on under the client's own progress token, and when
 * none has come for `everyMs` (the hub answered as JSON, or a proxy holds
 * its stream back) it sends its own, so the client hears something at
 * least every `everyMs` for as long as the hub call is pending.
 *
 * Progress is the milliseconds since the call reached the bridge, which
 * only grows, as the protocol asks, whichever side the notification came
 * from.
 */
import type { Progress, ProgressToken, ServerNotification } from '@modelcontextprotocol/server';

const PROGRESS_EVERY_MS = 10_000;

export class ProgressRelay {
  private readonly started = Date.now();
  private last = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly token: ProgressToken | undefined,
    private readonly notify: (notification: ServerNotification) => Promise<void>,
    private readonly everyMs = PROGRESS_EVERY_MS,
  ) {
    this.arm();
  }

  /** A progress notification from the hub for this call. */
  relay(progress: Progress): void {
    this.send(progress.message ?? this.ownMessage());
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private send(message: string): void {
    if (this.token === undefined || this.stopped) return;
    const progress = Math.max(this.last + 1, Date.now() - this.started);
    this.last = progress;
    void this.notify({ method: 'notifications/progress', params: { progressToken: this.token, progress, message } }).catch(() => {});
    this.arm();
  }

  private ownMessage(): string {
    return `waiting for the hub's answer after ${Math.round((Date.now() - this.started) / 1000)} s`;
  }

  private arm(): void {
    if (this.token === undefined || this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.send(this.ownMessage()), this.everyMs);
  }
}
