/**
 * What a name changes about an append (spec §8d). A named channel's record
 * may not say it is from someone else (`from_mismatch`); a named stdio
 * server states its agent in the deposit header (`agent: NAME`), since its
 * `deposited-by` is the bare `mcp` every stdio server writes; and an answer
 * sent without an idempotency key gets the one the recipes give it,
 * `<agent>/answer/<question id>`, so an answer repeated after a restart or a
 * lost reply lands once. An unnamed append is left exactly as it came,
 * except that it may not be an about: an about's subject is the channel's
 * agent, and an unnamed channel has none.
 */
import { ABOUT_KIND, aboutOf, aboutUnnamed } from '../../model/about.js';
import { BROADCAST, checkAgentName, fromMismatch } from '../../model/agent-name.js';
import { answerKey } from '../../model/answer-key.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordClaims } from '../../model/record.js';
import type { AppendOptions } from '../store-options.js';

export interface NamedAppend {
  options: AppendOptions;
  /** The name the deposit header states (stdio), which also scopes its idempotency keys; undefined where the channel carries it. */
  statedAgent: string | undefined;
}

export function namedAppend(claims: RecordClaims, options: AppendOptions, shape: IdShape): NamedAppend {
  const { agent } = options;
  if (agent === undefined) return { options, statedAgent: undefined };
  const statedAgent = statedAgentOf(options);
  if (claims.from !== null && claims.from !== agent) throw fromMismatch(claims.from, agent, statedAgent === undefined);
  const key = options.idempotencyKey === undefined ? answerKey(agent, claims, shape) : undefined;
  return key === undefined ? { options, statedAgent } : { options: { ...options, idempotencyKey: key }, statedAgent };
}

/**
 * The agent: key to write: the name, unless deposited-by already carries it
 * as the verified mcp/NAME or http/NAME. A local user's cli/NAME is a user,
 * not an agent (depositingAgent), so an operator's record for an agent of
 * the same name still states it.
 */
export function statedAgentOf(options: AppendOptions): string | undefined {
  const { agent, depositedBy } = options;
  if (agent === undefined || depositedBy === `mcp/${agent}` || depositedBy === `http/${agent}`) return undefined;
  return agent;
}

export interface StatedAbout {
  agent: string;
  about: string;
}

/**
 * What a kind: about record says of its channel's agent (lib/model/about.ts),
 * or undefined for a record of any other kind. Refused, storing nothing,
 * where its channel names no agent (about_unnamed), where that name is the
 * broadcast name (bad_agent_name), or where its body is no fit line
 * (bad_about). Its from: was checked against the agent already (namedAppend).
 */
export function statedAbout(claims: RecordClaims, bytes: Uint8Array, options: AppendOptions): StatedAbout | undefined {
  if (claims.kind !== ABOUT_KIND) return undefined;
  const { agent } = options;
  if (agent === undefined) throw aboutUnnamed();
  if (agent === BROADCAST) checkAgentName(agent, 'The agent name');
  return { agent, about: aboutOf(bytes) };
}
