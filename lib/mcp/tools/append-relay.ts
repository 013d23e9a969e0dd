import { z } from 'zod';
import { encodeRecordText } from '../../model/record.js';
import { appendText } from '../../model/render.js';
import { depositedAtField, depositedByField, idParam, provenanceField } from './shared.js';
import { defineTool } from './tool.js';

export const appendRelay = defineTool({
  name: 'append_relay',
  title: 'Append a relay record',
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  // The one call that changes anything: signed over HTTP, and one append from its agent's rate.
  door: { signed: true, spends: 'append', progress: false },
  contract: ({ shape, maxRecordBytes }) => ({
    description: [
      'Store one record permanently: the only tool that writes. Records are immutable and every agent can read them, so send final text.',
      // No wait here: the answer arrives in the one loop wait_for_relay describes, so an asker keeps serving (two agents asking each other cannot deadlock).
      'To ask, put the headers inside bytes (no to or kind arguments): "@p-e/x0\nkind: question\nfrom: <you>\nto: <peer>\n\n<question>" (<you>: your swarm-unique name; <peer>: a name, or all), with a fresh idempotency_key (the same on retries). Answers come to: <you> with parent: <the returned id>, in your wait_for_relay loop (no separate wait; it says when to stop).',
      'Refusals: isError text, code in _meta["p-e-relay/error"].code, as each parameter says; a refused append stores nothing. A read-only mirror refuses read_only. Over HTTP, past 10 appends a second per agent (bursts to 20): rate_limited; retry after _meta["p-e-relay/error"].retryAfterS seconds with the same idempotency_key.',
    ].join('\n\n'),
    input: {
      // The common case first: an agent writing a new record learns "omit it" before the rare repair.
      id: idParam(shape, 'Omit for a new record. The store then gives it the next free id (ids_exhausted when none is left). Give an id only to re-deposit a lost record under its own id', `One not held and not beyond the next free id; refused bad_id when malformed, id_held when held (_meta["p-e-relay/error"].identical: true means it holds your bytes: your earlier call landed, nothing to do), id_ahead when beyond the next free id (.nextFree there names it).\n\nA re-deposit takes a new idempotency_key or none: under the original's key it is refused damaged and stores nothing. Waits already past this id never return it; if agents must see it, also append its bytes as a new record (no id, a new key) with ref: <original id> added, and treat the new id as the question's id (answers name it in parent:)`).optional(),
      bytes: z.string().describe(`the whole record, stored byte for byte. Line 1 exactly @p-e/x0 (else bad_record); then header lines "name: value" (names case-insensitive; LF or CRLF) up to the first empty line (a header-section line without ":" is ignored, not taken as body: end the headers with an empty line); then the body, any text, may be empty. No header is required. The store reads: kind: (any word; question and answer by convention), from: (your name, the one peers address you by; a claim, never checked), to: (recipient names, separated by commas or spaces), parent: (one id; extra ids there are ignored; an answer names its question here), ref: (ids separated by spaces or commas; may repeat). Use ASCII names without spaces or commas (to: splits there, from: is taken whole), so a reply's to: <its from> reaches exactly its author. Only ids of this store's shape link: a malformed one (${shape.format(33).replace(/-0+/, '-')}) is stored but never matches replies_to or list_replies. Other headers are kept and ignored; of a repeated header other than ref:, the first counts. UTF-8 without NUL, at most ${maxRecordBytes} bytes (over HTTP keep bytes under ~60 KiB: a JSON request body over 64 KiB is refused first, HTTP 413, too_large), at most 64 distinct ids in parent:/ref:; else refused bad_record, too_large or too_many_refs`),
      // A question's key is random; an answer's is derived from the question, so re-answering after a restart or a re-read replays or conflicts instead of storing twice (SPEC §8b: the scope is the channel and the key).
      idempotency_key: z.string().optional().describe('optional, but without it a retry after a lost response stores a second copy. 1-200 printable ASCII (else bad_idempotency_key). The rule: a call under a used key with the same bytes answers the first record with replayed: true and stores nothing; with other bytes (or another id) it is refused idempotency_conflict, naming the first record in _meta["p-e-relay/error"].id: that record already landed, so do not resend (under an answer key: you already answered; a question key: await its answers). A refused call does not use the key. Keys, one per record and the same on every retry of it: a fresh random one (e.g. a UUID) for a question or note; for an answer "<you>/answer/<question id>", so answering it again stores nothing. A key holds forever, per channel (depositedBy): over stdio every agent shares the channel mcp, so a key must be yours alone: random, or built from your own name'),
    },
    output: {
      id: z.string().describe('the id the record was stored under. The text is one line: "stored <id> (<digest>, deposited-by <depositedBy>, provenance <provenance>, at <depositedAt>)"'),
      digest: z.string().describe('sha256:<64 hex> of your bytes'),
      depositedBy: depositedByField,
      provenance: provenanceField,
      depositedAt: depositedAtField,
      replayed: z.literal(true).optional().describe('present when an earlier call with this idempotency_key stored it; the text then reads "already stored as <id> by an earlier call with this idempotency key (…)"'),
      durability: z.string().optional().describe('present only on a filesystem that cannot make the new name durable (e.g. sshfs): what a power cut could still lose; the text line ends "; not yet power-cut safe: <this>". Informational: the record is stored and readable; do not re-append'),
    },
  }),
  async run(store, { id, bytes, idempotency_key }, { grant }) {
    const result = await store.append(encodeRecordText(bytes), { id, depositedBy: grant.depositedBy, idempotencyKey: idempotency_key });
    if (!result.replayed) grant.stored();
    return { text: appendText(result), structured: { ...result } };
  },
});
