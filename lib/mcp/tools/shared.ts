/**
 * Pieces of wording and schema that several tools share, built for the
 * store's id width. Each fact is written here once; a tool's own file says
 * only what is true of that tool (what a malformed id does there, say).
 */
import { z } from 'zod';
import type { IdShape } from '../../model/ids.js';

/** The id shape in a few words: what every id parameter says before its role. */
export function idShapeText(shape: IdShape): string {
  return `${shape.describe}, e.g. ${shape.example}, compared literally (relay-33 is no id)`;
}

/** An id parameter: its role, the shape, then anything that is true of it in this tool only. */
export function idParam(shape: IdShape, role: string, more = '') {
  return z.string().describe(`${role}: ${idShapeText(shape)}${more && `. ${more}`}`);
}

export const provenanceField = z
  .enum(['as-received', 'authored'])
  .describe('as-received for every record sent through a channel; authored only when a local operator declared with `p-e-relay append --authored` that they wrote it');

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

const names = (what: string) => z.union([z.string(), z.array(z.string())]).optional().describe(what);

/**
 * The §8a filters in full: wait_for_relay's, where agents use them most.
 * list_relays takes the same filters and points here (listFilterParams).
 */
export function filterParams(shape: IdShape) {
  return {
    to: names('optional: only records whose to: names one of these: a name or a list, e.g. ["scout-7","all"] (a string is split at commas and spaces, like the header). Literal: Scout-7 is not scout-7, no wildcard; a record without to: never matches'),
    from: names('optional: only records whose from: is exactly one of these names'),
    kind: names('optional: only records whose kind: is one of these, e.g. "question"'),
    replies_to: z.string().optional().describe(`optional: only records naming this id in parent: or ref: (what list_replies answers); ${idShapeText(shape)}; a malformed one is refused (bad_id)`),
  };
}

/** The same filters on list_relays, described by reference. */
export function listFilterParams(shape: IdShape) {
  return {
    to: names('optional: only held records whose to: names one of these (a name or a list; as wait_for_relay\'s to)'),
    from: names('optional: only held records whose from: is one of these names'),
    kind: names('optional: only held records whose kind: is one of these'),
    replies_to: z.string().optional().describe(`optional: only held records naming this id in parent: or ref:; ${shape.describe}, a malformed one is refused (bad_id)`),
  };
}
