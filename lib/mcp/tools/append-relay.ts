import { z } from 'zod';
import { encodeRecordText } from '../../model/record.js';
import { appendText } from '../../model/render.js';
import { idParam, provenanceField } from './shared.js';
import { defineTool } from './tool.js';

export const appendRelay = defineTool({
  name: 'append_relay',
  title: 'Append a relay record',
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  // The one call that changes anything: signed over HTTP, and one append from its agent's rate.
  door: { signed: true, spends: 'append', progress: false },
  contract: ({ shape, maxRecordBytes }) => ({
    description: [
      'Store one record permanently: the only tool that writes. Records are immutable and every agent of the hub reads them, so send final text. Answers once it is durable: the line "stored <id> (…)" and the id and deposit facts.',
      'To ask a peer: bytes with `to: <peer>` and `kind: question`, then call wait_for_relay with replies_to and after both set to the returned id. `to: all` addresses everyone. How to answer: see wait_for_relay.',
      'Refusals, from every tool, are isError results: a sentence saying what to send instead, and _meta["p-e-relay/error"] = {code, …details}. A refused append stores nothing: bad_record, too_large, too_many_refs (the bytes); bad_id, id_held, id_ahead (the id); idempotency_conflict; read_only (a mirror; names its primary). Over HTTP, rate_limited past 10 appends a second per agent (bursts of 20; hub defaults): send the same call again after the N s it names.',
    ].join('\n\n'),
    input: {
      id: idParam(shape, 'optional: the id to store it under', 'Omit it for a new record, which takes the next free id. Only to re-deposit a lost record under its own id: one not held and not beyond the next free id (exists says KNOWN_MISSING when a held record cites it). Refused bad_id when malformed; id_held when held (identical: whether the held bytes are yours, i.e. your earlier call landed); id_ahead when beyond the next free id (nextFree)').optional(),
      bytes: z.string().describe(`the whole record, stored byte for byte. Line 1 exactly @p-e/x0; then header lines "name: value" (names case-insensitive; LF or CRLF) up to the first empty line; then the body, any text, may be empty. No header is required. The store reads: kind: (any word; question and answer by convention), from: (your name, the one peers address you by; a claim, never checked), to: (recipient names, separated by commas or spaces), parent: (one id), ref: (ids separated by spaces or commas; may repeat). Other headers are kept and ignored; of a repeated header other than ref:, the first counts. UTF-8 without NUL, at most ${maxRecordBytes} bytes (over HTTP the hub's 64 KiB request cap binds first), at most 64 distinct ids in parent:/ref:. Example: "@p-e/x0\nkind: question\nfrom: scout-7\nto: critic-2\n\nIs ${shape.example} right?"`),
      idempotency_key: z.string().optional().describe('optional: makes a retry safe. A fresh random key (1-200 printable ASCII, e.g. a UUID) per record you mean to store, the same key on every retry of it: a retry with the same bytes answers the first record with replayed: true and stores nothing; other bytes (or another id) are refused idempotency_conflict, naming the first record. A key holds forever, per channel (depositedBy): over stdio every agent shares the channel mcp, so never reuse one'),
    },
    output: {
      id: z.string().describe('the id the record was stored under'),
      digest: z.string().describe('sha256:<64 hex> of your bytes'),
      depositedBy: z.string().describe('the channel the bytes came through, not who wrote them: mcp (stdio), mcp/<agent> (signed MCP over HTTP), http/<agent> (REST) or cli/<user>'),
      provenance: provenanceField,
      depositedAt: z.string().describe('when the store wrote it, ISO 8601 UTC'),
      replayed: z.literal(true).optional().describe('present when an earlier call with this idempotency_key stored it'),
    },
  }),
  async run(store, { id, bytes, idempotency_key }, { grant }) {
    const result = await store.append(encodeRecordText(bytes), { id, depositedBy: grant.depositedBy, idempotencyKey: idempotency_key });
    if (!result.replayed) grant.stored();
    return { text: appendText(result), structured: { ...result } };
  },
});
