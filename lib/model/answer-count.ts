/**
 * Which replies count as a question's answers (a wait item's `answers`):
 * the loop answers a broadcast only while it has none, so a count that can
 * be forged silences a swarm. Pure.
 *
 * - The reply's kind is answer in any case (`Answer` is an answer), and the
 *   question's kind is question in any case (`Question` gets a count too).
 * - It landed after the question: an answer citing an id before the
 *   question existed (30 answers to future ids made every later broadcast
 *   arrive "already answered") is not an answer to it.
 * - Where the channel says who deposited it (the HTTP door's `mcp/NAME` or
 *   `http/NAME`, a named stdio server's `agent:`), its `from:`, if any, is
 *   that agent: a from: someone else (a record from before from_mismatch,
 *   or put in by hand) does not count. An unnamed channel's answer counts:
 *   nothing there can say otherwise.
 */
import { depositingAgent } from './agent-name.js';
import type { RecordMeta } from './record-index.js';

export function isQuestion(kind: string | null | undefined): boolean {
  return kind?.toLowerCase() === 'question';
}

/** Whether reply `m` (its metadata) counts as an answer to question `n`, whose id is `id`. */
export function countsAsAnswer(n: number, id: string, m: number, reply: RecordMeta): boolean {
  if (reply.kind?.toLowerCase() !== 'answer' || reply.parent !== id || m <= n) return false;
  const agent = depositingAgent(reply.depositedBy, reply.agent);
  return agent === null || reply.from === null || reply.from === agent;
}
