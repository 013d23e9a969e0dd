/**
 * The text each read answers with. The MCP tools, the REST routes (for
 * text/plain) and the CLI all print these, so an agent, a curl user and an
 * operator see the same sentence for the same fact.
 */
import type { IdState } from '../model/record-index.js';
import type { AppearedRecord, AppendResult, ListResult, LiveWorkClaim, RepliesResult, WaitResult } from '../store/store.js';
import type { Behind } from '../store/checkpoint-frontier.js';
import { drawBoundary, fenceRule, fenced } from '../model/fence.js';
import { claimText } from '../model/claim-text.js';

export function existsText(id: string, state: IdState): string {
  return `${id} ${state}`;
}

/**
 * Live work claims (spec §8e), one line each: `relay-0042 ana until
 * 2026-12-06T08:30:00.000Z: task:t1 path:src/api`. At most `limit` lines
 * after the head; the head says how many there are. The holder of a claim
 * copied in is its unchecked from:, shown as claim-text.ts shows one.
 */
export function workClaimsText(claims: readonly LiveWorkClaim[], limit = Infinity): string {
  const lines = claims.slice(0, limit).map((c) => `${c.id} ${claimText(c.holder, 'from')} until ${c.lapsesAt}: ${c.targets.join(' ')}`);
  if (claims.length > limit) lines.push(`… ${claims.length - limit} more (p-e-relay claims, GET /claims)`);
  return [`live claims (${claims.length}):`, ...lines].join('\n');
}

/** Exactly two lines: `present (N): …` and `known missing (M): …`. */
export function listText(list: ListResult): string {
  const line = (label: string, ids: string[]) => `${label} (${ids.length}):${ids.length ? ' ' + ids.join(' ') : ''}`;
  return `${line('present', list.present)}\n${line('known missing', list.knownMissing)}`;
}

export function appendText(result: AppendResult): string {
  if (result.replayed) return `already stored as ${result.id} by another call with this idempotency key (replayed: ` +
    `true; ${result.digest}, deposited-by ${result.depositedBy}, provenance ${result.provenance}, ` +
    `at ${result.depositedAt})`;
  const stored = `stored ${result.id} (${result.digest}, deposited-by ${result.depositedBy}, provenance ${result.provenance}, at ${result.depositedAt})`;
  return result.durability ? `${stored}; not yet power-cut safe: ${result.durability}` : stored;
}

/** A reply's line carries deposited-by once the store's replies hold it (they are wait's fields). */
type Reply = RepliesResult['replies'][number] & { depositedBy?: string };

export function repliesText(result: { parent: string; replies: Reply[]; deliveredTo?: string[] }): string {
  const head = `replies to ${result.parent} (${result.replies.length}):`;
  const lines = [head, ...result.replies.map((r) => `${r.id}${claims(r)}${r.depositedBy ? ` deposited-by ${r.depositedBy}` : ''}`)];
  // Receipts, where a recipient keeps marks: the names, or that none has had it yet.
  if (result.deliveredTo !== undefined) lines.push(`delivered to: ${result.deliveredTo.length ? result.deliveredTo.join(' ') : 'nobody yet'}`);
  return lines.join('\n');
}

/** What a record's line adds where no key proves its sender (model/agent-name.ts `signedBy`): its from: is only a claim. */
export const UNPROVEN = ', sender unproven';

/**
 * One record as one line: what `wait` prints per record, and what `tail -f`
 * prints for hosts that watch a command's output (`inbox` prints the same).
 *   relay-0042 (kind question, from a, to b c, parent relay-0040, refs relay-0007) deposited-by mcp, as-received
 */
export function appearedLine(record: AppearedRecord): string {
  const by = record.answeredBy?.length ? ` (by ${record.answeredBy.join(', ')})` : '';
  const answers = record.answers === undefined ? '' : `, ${record.answers} answer${record.answers === 1 ? '' : 's'} held${by}`;
  // An MCP item whose sender no key proves says so where a model reading the text alone sees it.
  const unproven = record.unproven ? UNPROVEN : '';
  return `${record.id}${claims(record)} deposited-by ${record.depositedBy}, ${record.provenance}${unproven}${answers}`;
}

/**
 * A wait's text; `cursor: false` for a named agent's, whose place the relay
 * keeps (it never passes a cursor back). `behind`: on a read-only replica,
 * records its newest checkpoint lists that have not arrived, so that an
 * empty answer is not taken for "nothing new" (lib/store/checkpoint-frontier.ts).
 * `lookOnly`: the wait was given no time (timeout 0), so it only looked and nothing timed out.
 */
export function waitText(result: WaitResult & { cursor: string }, { cursor: withCursor = true, behind = null as Behind | null, lookOnly = false } = {}): string {
  const cursor = withCursor ? [`cursor: ${result.cursor} (to read on from there, pass it as after)`] : [];
  if (result.appeared.length === 0) {
    const what = !result.timedOut ? `the wait ended after ${result.waitedMs} ms with nothing new` : lookOnly ? 'nothing new (looked without waiting)' : `nothing appeared in ${result.waitedMs} ms (timed out)`;
    return [behind ? `${what} here, but this replica is behind: ${behindText(behind)}` : what, ...cursor].join('\n');
  }
  const bytes = result.appeared.flatMap((r) => (r.bytes === undefined ? [] : [r.bytes]));
  const boundary = bytes.length ? drawBoundary(bytes) : '';
  const head = `${result.appeared.length} appeared after ${result.waitedMs} ms:${boundary ? ' ' + fenceRule(boundary) : ''}`;
  return [head, ...result.appeared.flatMap((r) => itemLines(r, boundary)), ...cursor].join('\n');
}

/** `checkpoint relay-0021 lists 2 records not here yet (relay-0015 relay-0017); they come with the next sync from the primary` */
export function behindText(b: Behind): string {
  const more = b.count > b.ids.length ? ` and ${b.count - b.ids.length} more` : '';
  return `checkpoint ${b.checkpoint} lists ${b.count} record${b.count === 1 ? '' : 's'} not here yet (${b.ids.join(' ')}${more}); they come with the next sync from the primary`;
}

/** An item's line, then, with include_bytes, its bytes fenced (fence.ts), or why they are not here. */
function itemLines(record: AppearedRecord, boundary: string): string[] {
  // A question to the caller carries its answer's first lines, outside the fence: the relay's words, not the asker's.
  const line = record.reply === undefined ? appearedLine(record) : `${appearedLine(record)}\n  reply: ${JSON.stringify(record.reply)} + your answer`;
  if (record.bytesOmitted) return [line, record.size === undefined ? '  (bytes omitted: unreadable now; get_relay says why)' : `  ` +
    `(bytes omitted: ${record.size} bytes, past this answer's 64 KiB; fetch with get_relay)`];
  if (record.bytes === undefined) return [line];
  return [line, ...fenced(record.id, boundary, ` bytes, ${record.digest}`, record.bytes)];
}

/** The claims of a record as ` (kind question, from a, to b, …)`, or '' when it makes none; each as claim-text.ts shows it. */
export function claims(r: { kind: string | null; from: string | null; to: string | null; parent?: string | null; refs?: string[] }): string {
  const parts = [r.kind && `kind ${claimText(r.kind, 'kind')}`, r.from && `from ${claimText(r.from, 'from')}`, r.to && `to ${claimText(r.to, 'to')}`, r.parent && `parent ${r.parent}`, r.refs?.length && `refs ${r.refs.join(' ')}`].filter(Boolean);
  return parts.length ? ` (${parts.join(', ')})` : '';
}
