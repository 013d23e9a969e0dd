/**
 * One Claude Code channel notification (`notifications/claude/channel`,
 * params `{content, meta}`) for a burst of records addressed to an agent.
 * The host shows it to the model as `<channel source="p-e-relay" …>content
 * </channel>`, so this is text a model reads: each record's sender, stated
 * with what the relay knows of it, then its bytes fenced (lib/model/fence.ts)
 * so that no body can draw another record's frame or our own lines.
 *
 * Size is capped per notification, the relay's own lines included: records
 * are shown whole while they fit in CONTENT_CAP_BYTES; one that does not is
 * shown as its line (its claims cut to claim-text.ts's cap) and the
 * get_relay call that fetches it, or, past that too, as its id and that
 * call alone. Pure: no store, no transport.
 */
import { drawBoundary, fenced, fenceRule } from '../../model/fence.js';
import { claims } from '../../doors/render.js';
import { signedBy } from '../../model/agent-name.js';
import { claimText } from '../../model/claim-text.js';
import type { RecordMeta } from '../../model/record-index.js';

/** The most bytes of content one notification carries (bodies past it are named, not shown). */
export const CONTENT_CAP_BYTES = 8 * 1024;
/** The most records one notification names; a longer burst goes on in the next one. */
export const MAX_RECORDS_PER_NOTIFICATION = 20;

export const CHANNEL_METHOD = 'notifications/claude/channel';

export interface PushedRecord {
  meta: RecordMeta;
  /** The record's own bytes (below the deposit header), or null when they could not be read. */
  bytes: string | null;
}

export interface ChannelParams {
  content: string;
  /** Claude Code shows each as an attribute of the <channel> tag: keys are identifiers, values strings. */
  meta: Record<string, string>;
}

export function channelNotification(agent: string, records: readonly PushedRecord[], cap = CONTENT_CAP_BYTES): ChannelParams {
  const bodies = records.flatMap((r) => (r.bytes === null ? [] : [r.bytes]));
  const boundary = drawBoundary(bodies);
  const head = `${records.length === 1 ? 'A record' : `${records.length} records`} for ${agent} on p-e-relay ` +
    `(already delivered: wait_for_relay will not return ${records.length === 1 ? 'it' : 'them'} ` +
    `again). ${fenceRule(boundary)}`;
  const lines = [head];
  let left = cap - Buffer.byteLength(head);
  records.forEach(({ meta, bytes }, i) => {
    // What the records after this one need at the least (their bare lines), so none of them pushes the whole past the cap.
    const reserve = records.slice(i + 1).reduce((sum, r) => sum + Buffer.byteLength(bareLine(r.meta)) + 1, 0);
    const line = `${meta.id}${claims(meta)}; ${sender(meta)}`;
    const shown = bytes === null ? null : fenced(meta.id, boundary, '', bytes).join('\n');
    const summary = `${line}\n  (not shown: ${bytes === null ? 'its bytes could not be read here' : `${Buffer.byteLength(bytes).toLocaleString('en-US')} bytes, past this notification's cap`}; get_relay ${meta.id} fetches it)`;
    const choices = [shown === null ? null : `${line}\n${shown}`, summary].map((text) => text && guardHostFrame(text));
    const entry = choices.find((text) => text !== null && Buffer.byteLength(text) + 1 + reserve <= left) ?? bareLine(meta);
    lines.push(entry);
    left -= Buffer.byteLength(entry) + 1;
  });
  const froms = [...new Set(records.map((r) => (r.meta.from === null ? '(none)' : claimText(r.meta.from, 'from', { bare: true }))))];
  const meta = { ids: records.map((r) => r.meta.id).join(' '), from: froms.join(' ') };
  // The host's frame is kept whole over everything it wraps: the bodies, and every line and attribute of ours that quotes a record.
  return { content: guardHostFrame(lines.join('\n')), meta: Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, guardHostFrame(v)])) };
}

/** A record's line when nothing more fits: its id and the call that fetches it. */
function bareLine(meta: RecordMeta): string {
  return `${meta.id} (not shown, past this notification's cap; get_relay ${meta.id} fetches it)`;
}

/**
 * Who sent it, as far as the relay can tell (spec §8d): a signed hub
 * channel verified the name; a named stdio server only stated it; any other
 * from: is the record's own claim.
 */
export function sender(meta: RecordMeta): string {
  const signer = signedBy(meta.depositedBy);
  if (signer !== null) return `sent by ${signer} (deposited-by ${meta.depositedBy}: verified by signature)`;
  if (meta.agent !== undefined) return `sent by ${meta.agent} (deposited-by ${meta.depositedBy}, agent: ${meta.agent}: stated by a local server, not verified)`;
  return `from: ${meta.from === null ? '(none)' : claimText(meta.from, 'from')} (deposited-by ${meta.depositedBy}: the record's own claim, not verified)`;
}

/**
 * The one change made to a body shown here, and to everything else the host
 * wraps in its <channel> frame: `</channel` becomes `<\/channel`, so no
 * record can end that frame and write text outside it. The fence already
 * marks every line inside as the record's; this keeps the host's own frame
 * whole too. get_relay returns the exact bytes.
 */
function guardHostFrame(text: string): string {
  return text.replace(/<\/(channel)/gi, '<\\/$1');
}
