/**
 * An agent's name (spec §8d): who a channel serves. Over HTTP it is the
 * agent whose signature was verified; over stdio it is what the operator
 * said (`serve --agent NAME`, `P_E_RELAY_AGENT`), so nothing there is
 * verified. Pure: no disk.
 */
import { RelayError } from '../errors.js';

/** The shape of a key name, lower case only (spec §8d): it names files under .state/marks/ and .state/roster/. */
export const AGENT_NAME_SHAPE = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** The name every agent listens for: a record to: all is for everyone, so no agent is called all. */
export const BROADCAST = 'all';

/**
 * The refusal of a key for `all`: every answer to such an "agent" (to: its
 * from:) would be a broadcast, and a record signed as it would read as one
 * from everyone. `keys add all` refuses it, and a hub refuses a signature
 * that names it, even where a key file for it is already there.
 */
export function broadcastAgent(signed: boolean): RelayError {
  const what = signed ? 'This request is signed as "all"' : 'A key for "all" cannot be added';
  return new RelayError('broadcast_agent', `${what}, the name every agent listens for (to: all reaches everyone), so an answer to it would ` +
    `reach every agent${signed ? '; nothing was done' : ''}. Give each agent a key of its own name (e.g. p-e-relay keys add scout-7)` +
    `${signed ? ', and sign as that agent' : ''}.`, { reason: 'broadcast_agent' });
}

/** The name, or a refusal that says what shape to send. `where` names what gave it (`--agent`, `P_E_RELAY_AGENT`). */
export function checkAgentName(name: string, where: string): string {
  if (name === BROADCAST) throw new RelayError('bad_agent_name', `${where} "all" is the name every agent listens for (to: all reaches everyone), so ` +
    `it cannot be one agent's. Pick another name (e.g. scout-7).`, { name });
  if (AGENT_NAME_SHAPE.test(name)) return name;
  throw new RelayError(
    'bad_agent_name',
    `${where} "${name}" is not an agent name. Send 1–64 characters of lower-case letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. scout-7).`,
    { name },
  );
}

/**
 * The agent a record was deposited by, where its channel names one: the
 * verified `mcp/NAME` or `http/NAME` of the HTTP door, or the `agent:` key a
 * named stdio server writes (stated, not verified). `cli/<user>` is a local
 * user, not an agent; plain `mcp` names no one.
 */
export function depositingAgent(depositedBy: string, agent: string | null | undefined): string | null {
  return agent || signedBy(depositedBy);
}

/** The agent whose key signed the deposit (`mcp/NAME`, `http/NAME`: the HTTP door's), or null where no key proves anyone. */
export function signedBy(depositedBy: string): string | null {
  const slash = depositedBy.indexOf('/');
  if (slash < 0) return null;
  const channel = depositedBy.slice(0, slash);
  return channel === 'mcp' || channel === 'http' ? depositedBy.slice(slash + 1) || null : null;
}

/** The from_mismatch refusal: a named channel's record says it is someone else's. */
export function fromMismatch(from: string, agent: string, verified: boolean): RelayError {
  const channel = verified ? `this request is signed by ${agent}` : `this server serves the agent ${agent} (serve --agent)`;
  return new RelayError(
    'from_mismatch',
    `This record says "from: ${from}", but ${channel}, so nothing was stored. Send it with "from: ${agent}" (or no from: line at all); a record for ` +
      `another agent is sent through that agent's own server or key.`,
    { from, agent },
  );
}

/** The unknown_recipient refusal (serve --strict-recipients): the to: names no one on the roster has. */
export function unknownRecipient(unknown: string[]): RelayError {
  const list = unknown.map((name) => `"${name}"`).join(', ');
  return new RelayError(
    'unknown_recipient',
    `This record's to: names ${list}, which no agent on this relay's roster has, and this server refuses such records (--strict-recipients), so ` +
      `nothing was stored. Check the spelling against the roster (p-e-relay agents, GET /agents), or address all.`,
    { unknown },
  );
}
