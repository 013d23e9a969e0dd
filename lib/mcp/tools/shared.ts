/** Pieces of wording and schema that several tools share, built for the store's id width. */
import { z } from 'zod';
import type { IdShape } from '../../model/ids.js';

export function idParam(shape: IdShape, role: string) {
  return z
    .string()
    .describe(`${role}. ${shape.describe}, e.g. ${shape.example}. Matched literally: nothing is padded, trimmed or case-folded, so relay-33 is a different string from ${shape.example}.`);
}

export const claimFields = {
  kind: z.string().nullable().describe('the record\'s own kind: header, or null'),
  from: z.string().nullable().describe('who the record says wrote it (a claim, not a verified identity), or null'),
  to: z.string().nullable().describe('whom the record says it is for, or null'),
};

const names = (what: string) =>
  z.union([z.string(), z.array(z.string())]).optional().describe(what);

/** The §8a filters, the same on wait_for_relay and list_relays. */
export function filterParams(shape: IdShape) {
  return {
    to: names('optional: only records whose to: names one of these; a name or a list, e.g. ["scout-7","all"]. Names match literally (Scout-7 is not scout-7), with no wildcard; a record without to: never matches'),
    from: names('optional: only records whose from: is one of these names (literal)'),
    kind: names('optional: only records whose kind: is one of these, e.g. "answer"'),
    replies_to: z.string().optional().describe(`optional: only records naming this id in parent: or ref: (what list_replies answers); ${shape.describe}, a malformed one is refused`),
  };
}
