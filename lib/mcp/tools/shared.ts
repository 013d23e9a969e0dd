/**
 * Pieces of wording and schema that several tools share, built for the
 * store's id width. Each fact is written here once; a tool's own file says
 * only what is true of that tool (what a malformed id does there, say).
 */
import { z } from 'zod';
import type { IdShape } from '../../model/ids.js';
import { MAX_FILTER_NAMES, MAX_TEXT_CHARS } from '../../model/filter.js';

/**
 * An id parameter: its role, then an example of the store's id shape (spec §3:
 * every schema states the width; the example shows it), then anything true of
 * it in this tool only. The shape in words, and that ids are compared
 * literally, is said once, in append_relay's bytes (the first tool read),
 * so each schema costs only its example.
 */
export function idParam(shape: IdShape, role: string, more = '') {
  return z.string().describe(`${role}, e.g. ${shape.example}${more && `. ${more}`}`);
}

/** Bare, for wait_for_relay's items: append_relay's output says what each value means, once per tools/list. */
export const provenanceValues = z.enum(['as-received', 'authored']);

export const provenanceField = provenanceValues
  .describe('authored: a local operator declared it their own (CLI); as-received: all else (every MCP append)');

export const depositedByField = z
  .string()
  .describe('the channel, not the author: mcp (stdio), mcp/<agent>, http/<agent>, cli/<user>');

export const depositedAtField = z.string().describe('when the store wrote it, ISO 8601 UTC');

/** What a record says about itself (its own headers): claims, never checked. kind needs no words (null when absent, as the type says). */
export const claimFields = {
  kind: z.string().nullable(),
  from: z.string().nullable().describe('its from: header (unchecked), or null'),
  to: z.string().nullable().describe('its to: header as written, or null'),
};

/** The thread links a record's headers name, as the index holds them. */
export const linkFields = {
  parent: z.string().nullable().describe('the id in its parent:, or null'),
  refs: z.array(z.string()).describe('the ids in its ref: lines, less the parent'),
};

/** The same fields without their descriptions, for a second schema of the same items in one tools/list. */
export function bare<T extends Record<string, z.ZodType>>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).map(([key, field]) => [key, field.meta({ description: undefined })])) as T;
}

/** Self-explanatory beside its siblings: no description, since every tools/list carries it. */
export const recordIdField = z.string();

const names = (what: string) => z.union([z.string(), z.array(z.string())]).optional().describe(what);

/**
 * The §8a name filters. wait_for_relay (the tool an agent loops on) carries
 * the full wording; list_relays points at it, so the ~1 KB is not sent twice
 * in every tools/list. Each says how it compares and what bad_filter refuses.
 */
export function filterParams() {
  return {
    to: names(`optional: records whose to: names one of these: a name or a list, e.g. ` +
      `["scout-7","all"], split at commas and spaces as the header is. ` +
      `Exact, case-sensitive, no wildcard; a record with no to: never matches. ` +
      `No name at all ("", [], ",") is refused bad_filter, as are over ${MAX_FILTER_NAMES} names`),
    from: names('optional: records whose from: is one of these; each string is one whole name (not split); else as to'),
    // Literal, as spec §8a says: what an agent does about case is list the spellings it accepts (the loop itself reads kind, in any case).
    kind: names('optional: records whose kind: is one of these, e.g. "question" (list each spelling you accept: "Question" is another); as from'),
    text: z.string().optional().describe(`optional: records holding every one of these words (whole, any case; ` +
      `punctuation only separates them); no word or over ${MAX_TEXT_CHARS} chars: bad_filter`),
  };
}

/** list_relays' filters: the same parsing as wait_for_relay's (lib/model/filter.ts), worded in full there; list_relays' description says so in one sentence. */
export function listFilterParams() {
  return {
    to: names('optional: records whose to: names one of these'),
    from: names('optional: records whose from: is one of these'),
    kind: names('optional: records whose kind: is one of these'),
    text: z.string().optional().describe('optional: records holding all these words'),
  };
}

/**
 * wait_for_relay's replies_to: the fallback for an answer the one loop missed
 * (sent to another to:): its items carry parent, so it tells the answer apart.
 */
export const waitRepliesTo = z.string().optional().describe(
  'optional: records naming this id in parent: or ref: (as list_replies); malformed: bad_id. ' +
  'With your question\'s id (after: it, timeout_ms: 0: never a second blocking wait) it finds the answer whatever its ' +
  'to: says');

/**
 * list_relays' replies_to: bare ids, answers and mere citations alike, so it
 * points at list_replies (which returns parent) rather than a get_relay per id.
 */
export const listRepliesTo = z.string().optional().describe('optional: only ids of records naming this id in parent: or ref: (list_replies tells answers from citations); malformed: bad_id');

/**
 * The named server's short wording (spec §8d: the relay keeps the agent's
 * place, from: and keys, so a parameter says what it is, not a recipe). The
 * loop itself is in the server's instructions (lib/mcp/instructions.ts).
 */
export function namedFilterParams() {
  return {
    to: names('optional: its to: names any of these'),
    from: names('optional: its from: is one of these'),
    kind: names('optional: its kind: is one of these (exact case)'),
    text: z.string().optional().describe('optional: it holds all these words'),
  };
}

/**
 * One refusal line for every tool of a named server: the sentence says what to do, so the listing names only the codes
 * that change the next step. hub_unreachable is a replica's (serve --forward): its primary did not answer, nothing was
 * stored or queued, and the same append sent again is stored once (an unkeyed named append gets a content key).
 */
export const NAMED_REFUSALS =
  'Refusals are isError text "<code>: <sentence>": do what the sentence says. ' +
    'Fix and resend: bad_record, too_large, too_many_refs, too_many_recipients, from_mismatch, unknown_recipient. ' +
    'rate_limited: retry after its seconds. disk_full, store_unavailable, hub_unreachable: retry once after your next wait_for_relay, ' +
    'then report it in your output. Others (read_only, ids_exhausted, damaged): final.';

/** A named server's replies_to, in list_relays and wait_for_relay alike. */
export const namedRepliesTo = z.string().optional().describe('optional: it names this id in parent: or ref:');
