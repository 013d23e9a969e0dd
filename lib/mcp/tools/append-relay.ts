import { z } from 'zod';
import { DEFAULT_BODY_CAP } from '../../http/body.js';
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
  contract: ({ shape, maxRecordBytes }) => ({
    description: [
      'Store one record permanently: the only tool that writes. Immutable, public: send final text.',
      // No wait here: the answer arrives in the one loop wait_for_relay describes, so an asker keeps serving (two agents asking each other cannot deadlock).
      // The trade-off of to: all is the asker's to choose: peers answering a broadcast do not check each other (a check per broadcast cost every agent a call and still raced), so a name is how to get one answer.
      'To ask, put the headers inside bytes: "@p-e/x0\nkind: question\nfrom: <you>\nto: <peer>\n\n<question>" (<you>: your swarm-unique name, never all; <peer>: a name, or all to let several peers answer), with idempotency_key "<you>/q/<n>" (the same on retries). Answers come to: <you> with parent: <the returned id>, in your wait_for_relay loop (no separate wait). To answer: wait_for_relay step 6.',
      // The refusal form is said here once for all six tools (it sat in four); the others list their codes.
      // One numbered rule per code group, so no model collects them from three parameters, and none retries a refusal that cannot change.
      // idempotency_conflict: the two outcomes an agent can act on, decided by what it holds (the refusal's own sentence, lib/model/idempotency-keys.ts, says the same told by the stored record's kind and from:).
      `Refusals (all tools): isError text, code in _meta["p-e-relay/error"].code; nothing stored.\nbad_record, too_large, too_many_refs, bad_idempotency_key: fix and resend.\nbad_id, id_held, id_ahead: see id.\nidempotency_conflict: if the record it names is this one (your answer, or this question reworded), done; else use the next n.\nrate_limited: retry after _meta["p-e-relay/error"].retryAfterS seconds.\ndisk_full, store_unavailable: retry once after your next wait_for_relay call, then report.\nread_only (a mirror), ids_exhausted: final. Never retry; report.\nTo report, say it in your output (no tool reaches your operator).`,
    ].join('\n\n'),
    input: {
      // The common case first: an agent writing a new record learns "omit it" before the rare repair, whose steps are exists' KNOWN_MISSING (said once, where the state is read).
      // "Whose bytes you hold" is what a re-deposit needs and what an agent can check after a context loss ("append_relay returned that id to you" was not).
      id: z.string().optional().describe(`Omit for a new record. Set it (e.g. ${shape.example}) only to re-deposit a lost record whose bytes you hold, as exists' KNOWN_MISSING says. Refused: bad_id (malformed), id_held (held already; _meta["p-e-relay/error"].identical: true means your bytes: done), id_ahead (above the next free id, _meta["p-e-relay/error"].nextFree)`),
      // The store's own limit (lib/model/record.ts, --max-record-bytes), the one figure it enforces on every door; the HTTP door's body cap (lib/http/body.ts, --body-cap) counts the whole JSON request and is named as the door's.
      bytes: z.string().describe(`the whole record, stored byte for byte: line 1 exactly @p-e/x0; "name: value" headers up to the first empty line; the body. The store reads kind: (lowercase: question, answer, …), from: (your name), to: (names, split at commas or spaces), parent: (one id: an answer's question), ref: (one or more ids, split at commas or spaces; repeatable); keeps others. Names: ASCII, no spaces or commas. An id not shaped like ${shape.example} links nothing. UTF-8 without NUL, at most 64 distinct ids in parent:/ref: and ${maxRecordBytes.toLocaleString('en-US')} bytes (over HTTP the hub's request cap binds first: ${DEFAULT_BODY_CAP.toLocaleString('en-US')} by default)`),
      // An answer's key is derived from the question, so re-answering after a restart or a re-read replays or conflicts instead of storing twice; every other record counts on under the asker's name.
      // SPEC §8b: the scope is the channel and the key, and over stdio every agent deposits as mcp: a key without the name collides across agents.
      // After a restart the catch-up (from: <you>, every kind) returns every record that can hold one of your n, so 1 + its count is free (a count of questions alone missed notes and copies: round 14).
      // A re-deposit under the original's key puts the record back under it (lib/store/append-once.ts), so the key goes on guarding it: an answer re-sent later replays.
      // A new key stores it too, but the original's key, whose record is gone, would then store the next answer again. The copy's bytes differ: a new n.
      idempotency_key: z.string().optional().describe('optional, but without it a retry after a lost response stores a second copy. 1-200 printable ASCII; one per record, the same on retries. Scope: the channel (depositedBy); over stdio all agents share mcp, so put your name in it: an answer "<you>/answer/<question id>"; any other record, a copy too, "<you>/q/<n>" (n: your counter, +1 per record; after a restart, 1 + all the records wait_for_relay\'s catch-up returned); a re-deposit keeps its original key if you know it (an answer\'s, you do). A repeat with the same bytes answers the first record with replayed: true. Other bytes (or id) are refused idempotency_conflict, naming the first record in _meta["p-e-relay/error"].id; that record gone: not_found, resend with id: that id. A refused call leaves it unused. Keys hold forever'),
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
