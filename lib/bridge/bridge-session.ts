/**
 * The bridge's session on the hub (spec §8d): a random id made at start and
 * sent in every tools/call (`_meta`, inside the signed body), so the hub
 * counts a call as proof only of what this session was answered. A bridge
 * that ends between a wait's answer and its next call leaves that answer
 * unproved, and the agent's next bridge has it again.
 *
 * The id is made anew when an inbox wait's answer may have reached the hub's
 * side and not the client (the client cancelled, the hub went silent past
 * the call's time, its stream broke): whatever the hub gave that call stays
 * pending under the old id, so a later call of this bridge does not prove
 * what the client never had. It comes again, as after a restart.
 */
import { randomBytes } from 'node:crypto';
import { SESSION_META } from '../model/session.js';

export class BridgeSession {
  private current = BridgeSession.fresh();

  /** The `_meta` a forwarded call carries. */
  meta(): Record<string, string> {
    return { [SESSION_META]: this.current };
  }

  get id(): string {
    return this.current;
  }

  /** An answer this session may have been given did not reach the client: go on as a new session. */
  lost(): void {
    this.current = BridgeSession.fresh();
  }

  private static fresh(): string {
    return randomBytes(16).toString('base64url');
  }
}
