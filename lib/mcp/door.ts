/**
 * What a call needs from the door it came through. Over stdio there is no
 * credential and nothing to check; over HTTP, a signed call must carry a
 * verified signature, and what it spends (an append from its agent's rate,
 * a wait or stream slot) is taken from the hub's budget. A tool states its
 * needs once, as door facts in its definition (lib/mcp/tools/), and the
 * registration asks the door with them; tools never look at transports.
 */
import type { RelayError } from '../errors.js';

/** What a call takes from a hub's budget: one append from its agent's rate, or a wait or stream slot held until it ends. */
export type Spend = 'append' | 'wait' | 'stream';

/** What a door must check and take before a call runs. */
export interface Admission {
  /** Over HTTP, refused unless the request's signature was verified. */
  readonly signed: boolean;
  readonly spends: Spend | null;
}

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
  /** Grants a call with these needs, or throws a RelayError saying what to send instead. */
  authorize(needs: Admission): Grant;
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
