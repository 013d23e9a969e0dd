/**
 * Pieces of wording and schema that several tools share, built for the
 * store's id width. Each fact is written here once; a tool's own file says
 * only what is true of that tool (what a malformed id does there, say).
 */
import { z } from 'zod';
import type { IdShape } from '../../model/ids.js';

/**
 * An id parameter: its role, then the store's id shape (SPEC §3: every schema
 * states the width), then anything true of it in this tool only. That ids are
 * compared literally is said once, in exists' description.
 */
export function idParam(shape: IdShape, role: string, more = '') {
  return z.string().describe(`${role}: ${shape.describe}, e.g. ${shape.example}${more && `. ${more}`}`);
}

export const provenanceField = z
  .enum(['as-received', 'authored'])
  .describe('as-received: sent through a channel (every MCP append is); authored: a local operator declared they wrote it themselves');

export const depositedByField = z
  .string()
  .describe('the channel the bytes came through, not who wrote them: mcp (stdio), mcp/<agent> (signed MCP over HTTP), http/<agent> (REST) or cli/<user>');

export const depositedAtField = z.string().describe('when the store wrote it, ISO 8601 UTC');

/** What a record says about itself (its own headers): claims, never checked. */
export const claimFields = {
  kind: z.string().nullable().describe('its kind: header, or null'),
  from: z.string().nullable().describe('its from: header: who it says wrote it (a claim, not a verified identity), or null'),
  to: z.string().nullable().describe('its to: header as written (e.g. "scout-7, all"), or null'),
};

/** The thread links a record's headers name, as the index holds them. */
export const linkFields = {
  parent: z.string().nullable().describe('the id in its parent:, or null'),
  refs: z.array(z.string()).describe('the ids in its ref: lines, first seen first, leaving out the parent'),
};

export const recordIdField = z.string().describe('the record\'s id');

/** How every name filter compares (SPEC §8a), said in each, since each is read alone. */
const LITERAL = (header: string, example = '') => `Exact and case-sensitive${example}, no wildcard; a record without ${header}: never matches`;

/** parseFilter's refusal of a filter that names nobody, said in each filter (only to is split, so only there is "," empty). */
const NOBODY = (examples: string) => `A value with no name in it (${examples}) is refused bad_filter`;

const names = (what: string) => z.union([z.string(), z.array(z.string())]).optional().describe(what);

/**
 * The §8a name filters, identical on wait_for_relay and list_relays: each
 * tool's schema is read alone, so neither points at the other. How filters
 * combine and compare is said in each tool's description, once. replies_to
 * differs by tool (items with parent there, bare ids here), so each tool adds
 * its own.
 */
export function filterParams() {
  return {
    to: names(`optional: only records whose to: names one of these: a name or a list, e.g. ["scout-7","all"]; each string is split at commas and spaces, as the header is. ${LITERAL('to', ' (Scout-7 is not scout-7)')}. ${NOBODY('"", [] or ","')}`),
    from: names(`optional: only records whose from: is one of these: a name or a list; each string is one whole name, trimmed, not split. ${LITERAL('from')}. ${NOBODY('"" or []')}`),
    kind: names(`optional: only records whose kind: is one of these, e.g. "question": a name or a list; each string whole, trimmed. ${LITERAL('kind')}. ${NOBODY('"" or []')}`),
  };
}

/**
 * wait_for_relay's replies_to: the fallback for an answer the one loop missed
 * (sent to another to:): its items carry parent, so it tells the answer apart.
 */
export const waitRepliesTo = z.string().optional().describe('optional: only records naming this id in parent: or ref: (what list_replies answers); a malformed one is refused (bad_id). Given your question\'s id (after: that id too, a cursor of its own), it finds its answer (the kind: answer item whose parent is that id) whatever its to: says: the fallback when an answer seems overdue');

/**
 * list_relays' replies_to: bare ids, answers and mere citations alike, so it
 * points at list_replies (which returns parent) rather than a get_relay per id.
 */
export const listRepliesTo = z.string().optional().describe('optional: only ids of records naming this id in parent: or ref:; a malformed one is refused (bad_id). To tell answers from citations use list_replies (it returns parent)');
