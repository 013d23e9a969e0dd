/**
 * What a tool needs to know about the door a call came through. Over stdio
 * there is no credential and nothing to check; over HTTP, appends and waits
 * must be signed, are rate limited and hold a limited number of slots. The
 * tools ask the door and never look at transports themselves.
 */
import type { RelayError } from '../errors.js';

export type GuardedAction = 'append' | 'wait';

export interface Grant {
  /** The deposited-by label for an append: `mcp`, or `mcp/<agent>` when a signature was verified. */
  depositedBy: string;
  /** Gives back whatever the grant held (a wait slot). Safe to call twice. */
  release(): void;
  /** Aborts when the door closes under the call (client gone, key revoked). */
  signal?: AbortSignal;
}

export interface Door {
  readonly transport: 'stdio' | 'http';
  /** Grants an append or a wait, or throws a RelayError saying what to send instead. */
  authorize(action: GuardedAction): Grant;
}

/** Pooled servers serve one request at a time; the HTTP door swaps `current` per request. */
export interface DoorRef {
  current: Door;
}

export const stdioDoor: Door = {
  transport: 'stdio',
  authorize: () => ({ depositedBy: 'mcp', release() {} }),
};

export type { RelayError };
