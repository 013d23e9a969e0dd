/**
 * What a name changes about an append (SPEC §8d). A named channel's record
 * may not say it is from someone else (`from_mismatch`); a named stdio
 * server states its agent in the deposit header (`agent: NAME`), since its
 * `deposited-by` is the bare `mcp` every stdio server writes; and an answer
 * sent without an idempotency key gets the one the recipes give it,
 * `<agent>/answer/<question id>`, so an answer repeated after a restart or a
 * lost reply lands once. An unnamed append is left exactly as it came.
 */
import { fromMismatch } from '../../model/agent-name.js';
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

/** The agent: key to write: the name, unless deposited-by already ends with it (mcp/NAME, http/NAME). */
export function statedAgentOf(options: AppendOptions): string | undefined {
  const { agent, depositedBy } = options;
  if (agent === undefined || depositedBy.endsWith(`/${agent}`)) return undefined;
  return agent;
}
