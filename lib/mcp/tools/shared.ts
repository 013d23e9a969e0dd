/**
 * Pieces of schema that several tools share, built for the store's id width.
 * Each is written here once; a tool's own file holds its description, whole.
 * The loop, the recipes and what to trust are the server's instructions
 * (lib/mcp/instructions.ts), said once per session, not in every tool.
 */
import { z } from 'zod';
import type { IdShape } from '../../model/ids.js';

/** An id parameter: its role, then an example of the store's id shape (spec §3: every schema states the width; the example shows it). */
export function idParam(shape: IdShape, role: string) {
  return z.string().describe(`${role}, e.g. ${shape.example}`);
}

export const provenanceValues = z.enum(['as-received', 'authored']);

/** What a record says about itself (its own headers), as the index holds them. Self-explanatory beside their names: no descriptions. */
export const claimFields = {
  kind: z.string().nullable(),
  from: z.string().nullable(),
  to: z.string().nullable(),
};

/** The thread links a record's headers name. */
export const linkFields = {
  parent: z.string().nullable(),
  refs: z.array(z.string()),
};

export const recordIdField = z.string();

const names = (what: string) => z.union([z.string(), z.array(z.string())]).optional().describe(what);

/**
 * The §8a record filters, for every tool that takes them (wait_for_relay,
 * list_relays): defined here once, so a filter added beside these lands in
 * every such tool. They compare exactly (lib/model/filter.ts); a filter that
 * names no one is refused bad_filter, which the refusal's sentence explains.
 */
export function filterParams() {
  return {
    to: names('optional: its to: names any of these'),
    from: names('optional: its from: is one of these'),
    kind: names('optional: its kind: is one of these (exact case)'),
    text: z.string().optional().describe('optional: it holds all these words (whole, any case)'),
  };
}

/** replies_to, in list_relays and wait_for_relay alike. */
export const repliesTo = z.string().optional().describe('optional: it names this id in parent: or ref:');
