/**
 * What one agent may take from the hub: an append budget (a token bucket,
 * one per agent, shared by /mcp and REST), a number of held sockets
 * (waits and streams, per agent and in all) and a number of signatures the
 * one-time guard holds for it (lib/auth/replay-guard.ts counts those). Pure bookkeeping; the door
 * turns a "no" into a refusal.
 */

export interface Limits {
  /** Appends per second an agent may sustain. */
  appendsPerSecond: number;
  /** Appends an agent may make at once after being idle. */
  appendBurst: number;
  waitsPerAgent: number;
  waits: number;
  streamsPerAgent: number;
  streams: number;
  /** Signatures one agent may have the one-time guard accept per minute (per hub process); bounds its entries on disk. */
  signaturesPerMinute: number;
}

export const DEFAULT_LIMITS: Limits = {
  appendsPerSecond: 10,
  appendBurst: 20,
  waitsPerAgent: 8,
  waits: 512,
  streamsPerAgent: 4,
  streams: 512,
  signaturesPerMinute: 600,
};

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one token: 0 when granted, else the milliseconds until one is free. */
  take(agent: string): number {
    const now = this.now();
    const b = this.buckets.get(agent) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    this.buckets.set(agent, b);
    if (this.buckets.size > 10_000) this.forgetFull(now);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) / this.perSecond) * 1000);
  }

  /** Buckets that have refilled are the same as no bucket; drop them so the map stays small. */
  private forgetFull(now: number): void {
    for (const [agent, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(agent);
    }
  }
}

/** Counted slots, per agent and in all. */
export class Slots {
  private readonly byAgent = new Map<string, number>();
  private total = 0;

  constructor(
    readonly perAgent: number,
    readonly limit: number,
  ) {}

  get active(): number {
    return this.total;
  }

  activeFor(agent: string): number {
    return this.byAgent.get(agent) ?? 0;
  }

  /** A release function, or a reason why no slot is free. Release is safe to call twice. */
  acquire(agent: string): (() => void) | 'agent' | 'total' {
    const mine = this.byAgent.get(agent) ?? 0;
    if (mine >= this.perAgent) return 'agent';
    if (this.total >= this.limit) return 'total';
    this.byAgent.set(agent, mine + 1);
    this.total++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.total--;
      const left = (this.byAgent.get(agent) ?? 1) - 1;
      if (left > 0) this.byAgent.set(agent, left);
      else this.byAgent.delete(agent);
    };
  }
}
