/**
 * A session's name on a hub (spec §8d): one process serves many sessions of
 * an agent over stateless HTTP, and a call proves delivery only of what its
 * own session was given. A call names its session in its request's `_meta`,
 * which is part of the signed body; the bridge makes one id at start.
 */

/** The `_meta` key of a tools/call request that names its session. */
export const SESSION_META = 'p-e-relay/session';

/** A session id: what a bridge makes (22 base64url characters), with room to spare, and nothing that needs escaping. */
export const SESSION_ID = /^[A-Za-z0-9_-]{8,64}$/;
