import { z } from 'zod';
import { encodeRecordText } from '../../model/record.js';
import { appendText } from '../../model/render.js';
import { depositedAtField, depositedByField, provenanceField } from './shared.js';
import { defineTool } from './tool.js';

export const appendRelay = defineTool({
  name: 'append_relay',
  title: 'Append a relay record',
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  // The one call that changes anything: signed over HTTP, and one append from its agent's rate.
  door: { signed: true, spends: 'append', progress: false },
  contract: ({ shape }) => ({
    description: [
      'Store one record permanently: the only tool that writes. Immutable, public: send final text.',
      // No wait here: the answer arrives in the one loop wait_for_relay describes, so an asker keeps serving (two agents asking each other cannot deadlock).
      'To ask, put the headers inside bytes: "@p-e/x0\nkind: question\nfrom: <you>\nto: <peer>\n\n<question>" (<you>: your swarm-unique name, never all; <peer>: a name, or all), with idempotency_key "<you>/q/<n>" (the same on retries). Answers come to: <you> with parent: <the returned id>, in your wait_for_relay loop (no separate wait).',
      // The refusal form is said here once for all six tools (it sat in four); the others list their codes.
      // One numbered rule per code group, so no model collects them from three parameters, and none retries a refusal that cannot change.
      // idempotency_conflict's branches live in its own sentence (lib/model/idempotency-keys.ts), told by the stored record's kind and from:, so they are not said twice.
      'Refusals (all tools): isError text, code in _meta["p-e-relay/error"].code; nothing stored.\nbad_record, too_large, too_many_refs, bad_idempotency_key: fix and resend.\nbad_id, id_held, id_ahead: see id.\nidempotency_conflict: do what its text says.\nrate_limited: retry after _meta["p-e-relay/error"].retryAfterS seconds.\ndisk_full, store_unavailable: retry once after your next wait_for_relay call, then report.\nread_only (a mirror), ids_exhausted: final. Never retry; report.\nTo report, say it in your output (no tool reaches your operator).',
    ].join('\n\n'),
    input: {
      // The common case first: an agent writing a new record learns "omit it" before the rare repair.
      id: z.string().optional().describe(`Omit for a new record. Set it (e.g. ${shape.example}) only to re-deposit your own lost record (exists says KNOWN_MISSING; yours if append_relay returned that id to you): the same bytes. Waits already past that id never return it: if peers must see it, also append it without id, with ref: <its id> (a question's answers may then name either id). The re-deposit keeps its original idempotency_key; the copy takes a new one ("<you>/q/<next n>"). Refused: bad_id (malformed), id_held (held already; _meta["p-e-relay/error"].identical: true means your bytes: done), id_ahead (above the next free id, _meta["p-e-relay/error"].nextFree)`),
      bytes: z.string().describe(`the whole record, stored byte for byte: line 1 exactly @p-e/x0; "name: value" headers up to the first empty line; the body. The store reads kind: (question, answer, …), from: (your name), to: (names, split at commas or spaces), parent: (one id: an answer's question), ref: (one or more ids, split at commas or spaces; repeatable); keeps others. Names: ASCII, no spaces or commas. An id not shaped like ${shape.example} links nothing. UTF-8 without NUL, at most 64 distinct ids in parent:/ref:; keep it ≤ 60 KiB (more may be refused too_large)`),
      // A question's key is the asker's own counter under its name, an answer's is derived from the question, so re-answering after a restart or a re-read replays or conflicts instead of storing twice.
      // SPEC §8b: the scope is the channel and the key, and over stdio every agent deposits as mcp: a key without the name collides across agents.
      idempotency_key: z.string().optional().describe('optional, but without it a retry after a lost response stores a second copy. 1-200 printable ASCII; one per record, the same on retries. Scope: the channel (depositedBy); over stdio all agents share mcp, so put your name in it: a question or note "<you>/q/<n>" (n: your counter, never reused; after a restart, 1 + the questions catch-up returned); an answer "<you>/answer/<question id>". A repeat with the same bytes answers the first record with replayed: true. Other bytes (or id) are refused idempotency_conflict, naming the first record in _meta["p-e-relay/error"].id; its text says what to do. A refused call leaves it unused. Keys hold forever'),
    },
    output: {
      id: z.string(),
      digest: z.string().describe('sha256:<64 hex> of your bytes'),
      depositedBy: depositedByField,
      provenance: provenanceField,
      depositedAt: depositedAtField,
      replayed: z.literal(true).optional().describe('true: an earlier call with this key stored it'),
      durability: z.string().optional().describe('only on a filesystem that cannot make it durable (e.g. sshfs): what a power cut could lose. It is stored: do not re-append'),
    },
  }),
  async run(store, { id, bytes, idempotency_key }, { grant }) {
    const result = await store.append(encodeRecordText(bytes), { id, depositedBy: grant.depositedBy, idempotencyKey: idempotency_key });
    if (!result.replayed) grant.stored();
    return { text: appendText(result), structured: { ...result } };
  },
});
