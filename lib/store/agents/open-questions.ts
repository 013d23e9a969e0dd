/**
 * Open questions (spec §8d): a question put to an agent by name that it has
 * not answered stays in view, by id, in its inbox waits, so a delivery its
 * model never read (a tool that failed to show the answer, a turn cut
 * short) is not lost to it once the next call counted it delivered.
 *
 * - A question is a held record whose kind: is question (any case) and whose
 *   to: names the agent itself (to: all alone does not: a broadcast asks
 *   whoever can add something, and no one owes it an answer), not the
 *   agent's own.
 * - It is open for that agent until a record of the agent's with kind:
 *   answer and parent: its id is held (lib/model/answer-count.ts), or for
 *   OPEN_FOR_MS after it landed (its deposited-at), whichever comes first.
 *   A question to several names is open for each of them until that one
 *   answers; another's answer does not close it for the rest. An asker who
 *   has gone (its key removed, never back) changes nothing: the answer is
 *   stored all the same, and reaches the asker if it comes back.
 * - Only its id is shown, at most OPEN_SHOWN of them (oldest first): the
 *   bytes came once, with the delivery, and get_relay fetches them again.
 *
 * Each process finds the candidates once per agent by a walk of the index
 * (to: the name), then only among the ids the agent's answers have passed
 * since; a record filled in below that point later (a lost id put back)
 * is not seen, as an `after` mark does not see it.
 */
import { BROADCAST, depositingAgent, AGENT_NAME_SHAPE } from '../../model/agent-name.js';
import { countsAsAnswer, isQuestion } from '../../model/answer-count.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordIndex, RecordMeta } from '../../model/record-index.js';

/** How long a question stays open for an agent that has not answered it: a day from when it landed. */
export const OPEN_FOR_MS = 24 * 60 * 60 * 1000;
/** At most this many open ids in one answer. */
export const OPEN_SHOWN = 20;

interface Found {
  /** The highest id walked for this agent. */
  through: number;
  /** Questions to it by name found so far, not yet answered or lapsed. */
  ids: Set<number>;
}

export class OpenQuestions {
  private readonly found = new Map<string, Found>();

  constructor(private readonly parts: { index: RecordIndex; shape: IdShape }) {}

  /**
   * The agent's open questions among ids up to `through` (what its answers
   * have covered), less `given` (the ones this answer carries in full),
   * oldest first, at most OPEN_SHOWN; `now` is this host's clock.
   */
  open(agent: string, through: number, given: Iterable<string> = [], now = Date.now()): string[] {
    const { index, shape } = this.parts;
    let found = this.found.get(agent);
    if (!found) this.found.set(agent, (found = { through: 0, ids: new Set() }));
    if (through > found.through) {
      for (const n of index.matchingAfter(found.through, { to: new Set([agent]) })) {
        if (n > through) break;
        const meta = index.get(n)?.meta;
        if (meta && isQuestion(meta.kind) && !ownRecord(meta, agent)) found.ids.add(n);
      }
      found.through = through;
    }
    const skip = new Set(given);
    const out: string[] = [];
    for (const n of [...found.ids].sort((a, b) => a - b)) {
      const meta = index.get(n)?.meta;
      if (!meta || lapsed(meta, now) || this.answered(n, meta.id, agent)) {
        found.ids.delete(n);
        continue;
      }
      if (!skip.has(meta.id) && out.length < OPEN_SHOWN) out.push(shape.format(n));
    }
    return out;
  }

  /**
   * Whom an answer to record `id` goes to: the agent its channel names
   * (signed, or a named stdio server's), else its from: when that is a
   * name, else everyone (all).
   */
  askerOf(id: string): string {
    const n = this.parts.shape.parseRecordId(id);
    const meta = n === null ? undefined : this.parts.index.get(n)?.meta;
    if (!meta) return BROADCAST;
    const agent = depositingAgent(meta.depositedBy, meta.agent);
    if (agent !== null) return agent;
    return meta.from !== null && AGENT_NAME_SHAPE.test(meta.from) ? meta.from : BROADCAST;
  }

  /** Whether a held answer to question `n` is the agent's own. */
  private answered(n: number, id: string, agent: string): boolean {
    const { index } = this.parts;
    return index.repliesTo(n).some((m) => {
      const reply = index.get(m)?.meta;
      return reply !== undefined && reply !== null && countsAsAnswer(n, id, m, reply) && ownRecord(reply, agent);
    });
  }
}

/** The agent's own record: its channel names the agent, or, where the channel names no one, its from: does. */
function ownRecord(meta: RecordMeta, agent: string): boolean {
  const by = depositingAgent(meta.depositedBy, meta.agent);
  return by === null ? meta.from === agent : by === agent;
}

function lapsed(meta: RecordMeta, now: number): boolean {
  const at = Date.parse(meta.depositedAt);
  return Number.isFinite(at) && now - at > OPEN_FOR_MS;
}
