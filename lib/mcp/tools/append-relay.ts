import { z } from 'zod';
import { RelayError } from '../../errors.js';
import { encodeRecordText } from '../../model/record.js';
import { provenanceValues } from './shared.js';
import { namedKey } from './named-key.js';
import type { RelayStore } from '../../store/store.js';
import { defineTool } from './tool.js';

export const appendRelay = defineTool({
  name: 'append_relay',
  title: 'Append a relay record',
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  // The one call that changes anything: signed over HTTP, and one append from its agent's rate.
  door: { signed: true, spends: 'append', progress: false },
  // The refusal form is said here once for all six tools (the first tool read), naming only the codes whose next step is a
  // retry; each refusal's own sentence says the rest (what to fix, or that it is final). hub_unreachable is a bridge's or replica's: nothing was stored, and the same
  // append sent again is stored once (the relay keyed it). agent_required and unsigned are a nameless caller's.
  // store_closed is the one store refusal named: the others (no_corpus, corpus_not_writable, cached_listings for an operator,
  // key_in_flight to send again later) say what to do in their sentences, and the listing has no bytes to spare.
  contract: ({ shape }) => ({
    description: `Store one record, permanent and public: the only tool that writes.
To ask: bytes "@p-e/x0\\nkind: question\\nto: PEER\\n\\nYOUR QUESTION" (PEER: a name, or all); the answer comes to your wait_for_relay.
from: leave it out, or your own name.
An answer lost? Send the same bytes again: the relay keys each record, so none is stored twice.
Refusals are isError text "<code>: <sentence>": do what it says; rate_limited: retry after its seconds; disk_full, store_closed, hub_unreachable: retry once after your next wait, then report it.
Claim shared files or tasks before work: kind: claim, claim: task:ID path:GLOB. claimed: taken, pick other work. End: kind: done or release, parent: its id. Who holds what: list_relays kind claim.`,
    input: {
      id: z.string().optional().describe(`omit. Only to put back a lost record (exists: KNOWN_MISSING) whose bytes you hold: its id, e.g. ${shape.example}`),
      // The size limit differs by door and flag (--max-record-bytes, --record-cap), so it is not stated here: too_large's sentence names the one that applies.
      bytes: z.string().describe(`the record: line 1 @p-e/x0, then "name: value" headers (kind:, from:, ` +
        `to: names split at commas or spaces, parent: one id, ref: ids), an empty line, the text (UTF-8)`),
      idempotency_key: z.string().optional().describe(
        'omit (the relay keys your records). Set one (1-200 printable ASCII) only to store the same bytes twice'),
    },
    output: {
      id: z.string(),
      digest: z.string(),
      depositedBy: z.string(),
      provenance: provenanceValues,
      depositedAt: z.string(),
      // Two calls in flight at once (an original and its retry) reach the store in an order the sender cannot see: the one it reaches first stores.
      replayed: z.literal(true).optional().describe('another call with this key stored it'),
      durability: z.string().optional().describe('stored, but a power cut could lose it'),
      unknownRecipients: z.array(z.string()).optional().describe('to: names never seen here (a typo?)'),
    },
  }),
  async run(store, { id, bytes, idempotency_key }, { grant }) {
    // A named caller's record is keyed by the relay (spec §8d); a nameless stdio server's is stored as it came.
    const idempotencyKey = grant.agent === null ? idempotency_key : namedKey(bytes, idempotency_key, store.shape);
    const record = encodeRecordText(bytes);
    if (grant.maxRecordBytes !== undefined && record.length > grant.maxRecordBytes) throw recordOverCap(record.length, grant.maxRecordBytes);
    // A replica's door hands the append to its primary (lib/replica/); everywhere else the store stores it.
    const append = grant.append ?? ((bytes, options) => store.append(bytes, options));
    const result = await append(record, { id, depositedBy: grant.depositedBy, idempotencyKey, agent: grant.agent ?? undefined });
    if (!result.replayed) grant.stored();
    return { text: appendAnswerText(result), structured: { ...result } };
  },
});

/**
 * The answer's text: the id and what changes the next step, no more. The
 * digest, channel and time are in structuredContent for whoever wants them;
 * a model that reads the text only needs the id it will see in parent:
 * (and unknownRecipients, which asks it to fix a name).
 */
function appendAnswerText(result: Awaited<ReturnType<RelayStore['append']>>): string {
  return [
    result.replayed ? `already stored as ${result.id} (replayed: true)` : `stored ${result.id}`,
    ...(result.unknownRecipients?.length ? [`unknownRecipients: ${result.unknownRecipients.join(', ')} (no agent here has that name)`] : []),
    ...(result.durability ? [`not yet power-cut safe: ${result.durability}`] : []),
  ].join('; ');
}

/** A record over the HTTP record cap: counted in its own bytes, not in the JSON that carried it. */
function recordOverCap(size: number, cap: number): RelayError {
  return new RelayError('too_large', `The record is ${size} bytes; over HTTP this hub takes records of at ` +
    `most ${cap}. Send a shorter record, or split it and link the parts with ref:.`, { limit: cap, size });
}
