import { z } from 'zod';
import { RelayError } from '../../errors.js';
import { encodeRecordText } from '../../model/record.js';
import { appendText } from '../../doors/render.js';
import { depositedAtField, depositedByField, NAMED_REFUSALS, provenanceField, provenanceValues } from './shared.js';
import { namedKey } from './named-key.js';
import type { RelayStore } from '../../store/store.js';
import { defineTool, type ToolFacts } from './tool.js';

export const appendRelay = defineTool({
  name: 'append_relay',
  title: 'Append a relay record',
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  // The one call that changes anything: signed over HTTP, and one append from its agent's rate.
  door: { signed: true, spends: 'append', progress: false },
  contract: (facts) => (facts.agent ? namedContract(facts, facts.agent) : unnamedContract(facts)),
  async run(store, { id, bytes, idempotency_key }, { grant, agent }) {
    const idempotencyKey = agent === undefined ? idempotency_key : namedKey(bytes, idempotency_key, store.shape);
    const record = encodeRecordText(bytes);
    if (grant.maxRecordBytes !== undefined && record.length > grant.maxRecordBytes) throw recordOverCap(record.length, grant.maxRecordBytes);
    // A replica's door hands the append to its primary (lib/replica/); everywhere else the store stores it.
    const append = grant.append ?? ((bytes, options) => store.append(bytes, options));
    const result = await append(record, { id, depositedBy: grant.depositedBy, idempotencyKey, agent: grant.agent ?? undefined });
    if (!result.replayed) grant.stored();
    return { text: agent === undefined ? appendText(result) : namedAppendText(result), structured: { ...result } };
  },
});

/**
 * A named agent's answer text: the id and what changes its next step, no
 * more. The digest, channel and time are in structuredContent for whoever
 * wants them; a model that reads the text only needs the id it will see in
 * parent: (and unknownRecipients, which asks it to fix a name).
 */
function namedAppendText(result: Awaited<ReturnType<RelayStore['append']>>): string {
  return [
    result.replayed ? `already stored as ${result.id} (replayed: true)` : `stored ${result.id}`,
    ...(result.unknownRecipients?.length ? [`unknownRecipients: ${result.unknownRecipients.join(', ')} (no agent here has that name)`] : []),
    ...(result.durability ? [`not yet power-cut safe: ${result.durability}`] : []),
  ].join('; ');
}

function unnamedContract(facts: ToolFacts) {
  return { description: unnamedDescription(), input: unnamedInput(facts), output: unnamedOutput() };
}

function unnamedDescription(): string {
  return [
    'Store one record permanently: the only tool that writes. Immutable, public: send final text.',
    // No wait here: the answer arrives in the one loop wait_for_relay describes, so an asker keeps serving
    // (two agents asking each other cannot deadlock).
    // The trade-off of to: all is the asker's to choose: peers answering a broadcast do not check each other
    // (a check per broadcast costs every agent a call and still races), so a name is how to get one answer.
    'To ask, put the headers inside bytes: "@p-e/x0\nkind: question\nfrom: <you>\nto: <peer>\n\n' +
      '<question>" (<you>: your swarm-unique name, never all; <peer>: a name, or all to let several peers answer), ' +
      'with idempotency_key "<you>/q/<n>" (the same on retries). ' +
      'Answers come to: <you> with parent: <the returned id>, in your wait_for_relay loop. ' +
      'To answer: wait_for_relay step 6.',
    // The refusal form is said here once for all six tools, in the first tool read; the codes below are this tool's, plus
    // store_unavailable, which any tool gives while its server closes (so exists and list_replies say "never refused" of a
    // malformed id only, not of everything).
    // One line per code group, so no model collects them from three parameters, and none retries a refusal that cannot change.
    // idempotency_conflict says how to tell its two outcomes apart, which the agent cannot guess: the key's kind says an
    // answer's, and for any other key the record it names (_meta id) is read; the refusal's own sentence
    // (lib/model/idempotency-keys.ts) names its kind and from:.
    `Every tool refuses with isError text "<code>: <sentence>" (fields in _meta["p-e-relay/error"]). ` +
      `Here (nothing stored):\nbad_record, too_large, too_many_refs, bad_idempotency_key: fix and resend.\n` +
      `bad_id, id_held, id_ahead: see id. not_found: see idempotency_key.\n` +
      `idempotency_conflict: the key holds its _meta id. An answer key: done. ` +
      `A q key: done only if get_relay shows that id is this same question, else the next n.\n` +
      `rate_limited: retry after the seconds it says.\n` +
      `disk_full, store_unavailable (any tool): retry once after your next wait_for_relay call, ` +
      `then report: say it in your output (no tool reaches your operator).\n` +
      `read_only (a mirror), ids_exhausted, damaged: final. Never retry; report.`,
  ].join('\n\n');
}

function unnamedInput({ shape, maxRecordBytes, requestCap }: ToolFacts) {
  return {
    // The common case first: an agent writing a new record learns "omit it" before the rare repair, said once here (get_relay's refusals point here).
    // "Whose bytes you hold" is what a re-deposit needs and what an agent can check after a context loss ("append_relay returned that id to you" was not).
    // The re-deposit goes back under its original key (lib/store/append/keyed-append.ts). It fills an id below every peer's cursor, so waits never return it;
    // the copy is what they see, and only when nothing replied to it yet: a question already answered would be answered again under the copy's id.
    id: z.string().optional().describe(`Omit for a new record. Set it (e.g. ${shape.example}) only to put back a ` +
      `lost record (exists: KNOWN_MISSING) whose bytes you hold: those bytes, ` +
      `under its original key if you know it. ` +
      `Waits past it never return it: if peers must read it and list_replies on it is empty, ` +
      `also append a copy: no id, the bytes plus a "ref: <it>" header, a new key. ` +
      `Refused: bad_id (malformed), id_held (held already; _meta["p-e-relay/error"].identical: true means your ` +
      `bytes: done), id_ahead (above the next free id, _meta["p-e-relay/error"].nextFree)`),
    // The store's own limit (lib/model/record.ts, --max-record-bytes), the one figure it enforces on every door; over HTTP
    // the hub's record cap (lib/http/body.ts, --record-cap), as the hub runs, binds first (stdio has none, so says nothing of it).
    // The id shape in words, once per tools/list (spec §3), here, in the first tool read, where ids are written; every id
    // schema shows it by example.
    // to: is a claim no one checks: a misspelled name reaches no addressed loop, and nothing else would say so.
    bytes: z.string().describe(`the whole record, stored byte for byte: line 1 exactly @p-e/x0; ` +
      `"name: value" headers up to the first empty line; the body. ` +
      `The store reads kind: (lowercase: question, answer, …), from: (your name), to: (names, ` +
      `split at commas or spaces; unchecked: a wrong name, or none, reaches no one), ` +
      `parent: (one id: an answer's question), ref: (one or more ids, split at commas or spaces; repeatable); ` +
      `keeps others. Names: ASCII, no spaces or commas. ` +
      `Ids: ${shape.describe} (${shape.example}), compared literally by every ` +
      `tool: ${shape.format(33).replace(/-0+/, '-')} or ${shape.example.toUpperCase()} is malformed (here it links ` +
      `nothing). UTF-8 without NUL, at most 64 distinct ids in parent:/ref: ` +
      `and ${maxRecordBytes.toLocaleString('en-US')} ` +
      `bytes${requestCap === undefined ? '' : ` (over this hub: ${requestCap.toLocaleString('en-US')})`}`),
    // An answer's key is derived from the question, so re-answering after a restart or a re-read replays or conflicts
    // instead of storing twice; every other record counts on under the asker's name.
    // spec §8b: the scope is the channel and the key, and over stdio every agent deposits as mcp: a key without the name
    // collides across agents.
    // After a restart the catch-up (from: <you>, every kind) returns every record that can hold one of your n, so 1 + its
    // count is free (a count of questions alone would miss notes and copies, which hold an n too).
    // The answer key's form is said once, in the answer recipe (wait_for_relay step 6); the re-deposit's key in id. The
    // copy's bytes differ: a new n.
    // A key whose record is gone is refused not_found naming the id (lib/store/append/keyed-append.ts): resent with that
    // id, it lands under the same key.
    idempotency_key: z.string().optional().describe(
      'optional, but without it a retry after a lost response stores a second copy. ' +
      '1-200 printable ASCII; one per record, the same on retries. ' +
      'Scope: the channel (depositedBy); over stdio all agents share mcp, ' +
      'so put your name in it: an answer\'s as wait_for_relay step 6 says; any other record\'s, a copy\'s too, ' +
      '"<you>/q/<n>" (n: your counter, +1 per record; after a restart, 1 + all the records wait_for_relay\'s ' +
      'catch-up returned). A retry with identical bytes answers the first record with replayed: true; ' +
      'other bytes (or id): idempotency_conflict; that record gone: not_found, ' +
      'resend with id: its _meta["p-e-relay/error"].id. A refused call leaves it unused. Keys hold forever'),
  };
}

function unnamedOutput() {
  return {
    id: z.string(),
    digest: z.string().describe('sha256:<64 hex> of your bytes'),
    depositedBy: depositedByField,
    provenance: provenanceField,
    depositedAt: depositedAtField,
    // Two calls in flight at once (an original and its retry) reach the store in an order the sender cannot see: the one it reaches first stores.
    replayed: z.literal(true).optional().describe('true: another call with this key stored it'),
    durability: z.string().optional().describe('stored, but a power cut could lose it (e.g. on sshfs): do not re-append'),
    // A signed call over HTTP is a named agent's, and this listing is the hub's for every caller: a field the answer may
    // carry that the schema (additionalProperties: false) left out fails every client that checks, after the record is stored.
    unknownRecipients: z.array(z.string()).optional().describe('to: names no agent here has used (a typo?)'),
  };
}



/**
 * A named server's append: the relay checks from:, keys every record (an
 * answer by its question), and says when to: names no known agent, so the
 * contract is the record's shape and the refusals; asking and answering are
 * steps of the loop in the server's instructions.
 */
function namedContract({ shape, maxRecordBytes, requestCap }: ToolFacts, agent: string) {
  const cap = requestCap === undefined ? '' : ` (over the hub: ${requestCap.toLocaleString('en-US')})`;
  return {
    description: [
      `Store one record permanently (immutable, public): the only write. Its from: is ${agent} or absent (another name: from_mismatch). The relay keys each record, so a retry stores nothing twice.`,
      NAMED_REFUSALS,
    ].join('\n\n'),
    input: {
      id: z.string().optional().describe(`omit. Only to put back a lost record (exists: KNOWN_MISSING) whose bytes you hold: its id, e.g. ${shape.example}`),
      bytes: z.string().describe(`the record: line 1 @p-e/x0, then "name: value" headers (kind:, ` +
        `to: names split at commas or spaces, parent: one id, ref: ids), an empty line, the text. ` +
        `UTF-8, at most ${maxRecordBytes.toLocaleString('en-US')} bytes${cap}`),
      idempotency_key: z.string().optional().describe(
        'omit: the relay keys an answer by its parent: and any other record by its bytes. ' +
        'Set one (1-200 printable ASCII) only to send the same bytes twice as two records'),
    },
    output: {
      id: z.string(),
      digest: z.string(),
      depositedBy: z.string(),
      provenance: provenanceValues,
      depositedAt: z.string(),
      replayed: z.literal(true).optional().describe('an earlier call stored it'),
      durability: z.string().optional().describe('stored, but a power cut could lose it'),
      unknownRecipients: z.array(z.string()).optional().describe('to: names that never served or signed here (a typo?); the parent\'s own author is never listed'),
    },
  };
}

/** A record over the HTTP record cap: counted in its own bytes, not in the JSON that carried it. */
function recordOverCap(size: number, cap: number): RelayError {
  return new RelayError('too_large', `The record is ${size} bytes; over HTTP this hub takes records of at ` +
    `most ${cap}. Send a shorter record, or split it and link the parts with ref:.`, { limit: cap, size });
}
