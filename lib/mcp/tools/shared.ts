/**
 * Pieces of schema that several tools share, built for the store's id width.
 * Each is written here once; a tool's own file holds its description, whole.
 * The loop, the recipes and what to trust are the server's instructions
 * (lib/mcp/instructions.ts), said once per session, not in every tool.
 */
import { z } from 'zod';
import { FILTER_FIELDS, type FilterFieldRow } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';

/** An id parameter: its role, then an example of the store's id shape (spec §3: every schema states the width; the example shows it). */
export function idParam(shape: IdShape, role: string) {
  return z.string().describe(`${role}, e.g. ${shape.example}`);
}

export const provenanceValues = z.enum(['as-received', 'authored']);

/**
 * What a record says about itself (its own headers), as the index holds them. Self-explanatory beside their names: no descriptions.
 * A header the record lacks is left out of the answer (result.ts drops nulls), not typed ["string","null"]: a type array is
 * refused by single-type schema dialects (the OpenAPI subset some hosts translate tools into).
 */
export const claimFields = {
  kind: z.string().optional(),
  from: z.string().optional(),
  to: z.string().optional(),
};

/** The thread links a record's headers name (parent left out when it names none). */
export const linkFields = {
  parent: z.string().optional(),
  refs: z.array(z.string()),
};

export const recordIdField = z.string();

const names = (what: string) => z.union([z.string(), z.array(z.string())]).optional().describe(what);
const one = (what: string) => z.string().optional().describe(what);

/** A filter's argument: a name or a list of names, else one string (an id, a search). */
type FilterParam<F extends FilterFieldRow> = F['value'] extends 'names' ? ReturnType<typeof names> : ReturnType<typeof one>;

/**
 * The §8a record filters, for every tool that takes them (wait_for_relay,
 * list_relays), built from the model's table (FILTER_FIELDS), so a filter
 * added there lands in every such tool; the tool passes its arguments to
 * parseFilter whole. They compare exactly (lib/model/filter.ts); a filter
 * that names no one is refused bad_filter, which the refusal's sentence
 * explains. An id filter is listed last, after the ones that match a
 * record's own words: the listing's order is part of the contract clients
 * cache (test/mcp/golden).
 */
export function filterParams(): { [F in FilterFieldRow as F['name']]: FilterParam<F> } {
  const ordered = [...FILTER_FIELDS.filter((f) => f.value !== 'id'), ...FILTER_FIELDS.filter((f) => f.value === 'id')];
  return Object.fromEntries(ordered.map((f) => [f.name, f.value === 'names' ? names(f.describe) : one(f.describe)])) as ReturnType<typeof filterParams>;
}
