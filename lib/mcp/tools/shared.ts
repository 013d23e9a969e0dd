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
