/**
 * A held record's metadata as the index answers it, built from its row only
 * when asked for (the index keeps no object per record).
 */
import type { Deposit, Provenance } from './deposit.js';
import { AUTHORED, HAS_PARENT, WHOLE, type IndexColumns } from './index-columns.js';
import type { RecordClaims } from './record.js';

export interface RecordMeta {
  id: string;
  kind: string | null;
  from: string | null;
  to: string | null;
  /** The id in parent:, or null. */
  parent: string | null;
  /** The other ids named in ref:, in first-seen order. */
  refs: string[];
  depositedBy: string;
  /** The `agent:` deposit key a named stdio server wrote (stated, not verified); absent otherwise. */
  agent?: string;
  provenance: Provenance;
  depositedAt: string;
  digest: string;
}

export interface IndexEntry {
  n: number;
  /** null when the file is held but damaged: its claims cannot be trusted. */
  meta: RecordMeta | null;
  /** The id in parent:, or null. */
  parent: number | null;
  /** Every id named in parent:/ref:, distinct, the parent first. */
  named: number[];
}

/** Record `n`'s entry from its row in `slot`; ids written with `format`. */
export function entryOf(c: IndexColumns, n: number, slot: number, format: (n: number) => string): IndexEntry {
  const flags = c.flags[slot]!;
  const named = Array.from(c.namedOf(slot));
  const parent = flags & HAS_PARENT ? named[0]! : null;
  if (!(flags & WHOLE)) return { n, meta: null, parent: null, named };
  const meta: RecordMeta = {
    id: format(n),
    kind: c.strings.at(c.kind[slot]!),
    from: c.strings.at(c.from[slot]!),
    to: c.strings.at(c.to[slot]!),
    parent: parent === null ? null : format(parent),
    refs: named.slice(parent === null ? 0 : 1).map(format),
    ...depositorOf(c.strings.at(c.depositedBy[slot]!)!),
    provenance: flags & AUTHORED ? 'authored' : 'as-received',
    ...c.textsOf(slot),
  };
  return { n, meta, parent, named };
}

/**
 * The depositedBy column holds one string per record for who deposited it:
 * the channel label, and after a line break the `agent:` a named stdio
 * server stated (no header value holds a line break). One column, so a
 * snapshot carries it unchanged and a swarm's few labels are interned once.
 */
export function depositorLabel(deposit: Deposit): string {
  return deposit.agent === undefined ? deposit.depositedBy : `${deposit.depositedBy}\n${deposit.agent}`;
}

function depositorOf(label: string): { depositedBy: string; agent?: string } {
  const cut = label.indexOf('\n');
  return cut < 0 ? { depositedBy: label } : { depositedBy: label.slice(0, cut), agent: label.slice(cut + 1) };
}

/** The ids a record names, distinct, its parent first (as parseRecord gives them; checked again here). */
export function distinctNamed(claims: RecordClaims): number[] {
  const out: number[] = claims.parent !== null ? [claims.parent] : [];
  for (const m of claims.named) if (!out.includes(m)) out.push(m);
  return out;
}
