/**
 * One Claude Code channel notification (`notifications/claude/channel`,
 * params `{content, meta}`) for a burst of records addressed to an agent.
 * The host shows it to the model as `<channel source="p-e-relay" …>content
 * </channel>`, so this is text a model reads: each record's sender, stated
 * with what the relay knows of it, then its bytes fenced (lib/model/fence.ts)
 * so that no body can draw another record's frame or our own lines.
 *
 * Size is capped per notification: records are shown whole while they fit
 * in CONTENT_CAP_BYTES; one that does not is shown as its line and the
 * get_relay call that fetches it. Pure: no store, no transport.
 */
import { drawBoundary, fenced, fenceRule } from '../../model/fence.js';
import { claims } from '../../doors/render.js';
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
  for (const { meta, bytes } of records) {
    const line = `${meta.id}${claims(meta)}; ${sender(meta)}`;
    const shown = bytes === null ? null : fenced(meta.id, boundary, '', guardHostFrame(bytes)).join('\n');
    if (shown !== null && Buffer.byteLength(line) + Buffer.byteLength(shown) + 2 <= left) {
      lines.push(line, shown);
      left -= Buffer.byteLength(line) + Buffer.byteLength(shown) + 2;
    } else {
      const why = bytes === null ? 'its bytes could not be read here' : `${Buffer.byteLength(bytes).toLocaleString('en-US')} bytes, past this notification's cap`;
      const summary = `${line}\n  (not shown: ${why}; get_relay ${meta.id} fetches it)`;
      lines.push(summary);
      left -= Buffer.byteLength(summary) + 1;
    }
  }
  const froms = [...new Set(records.map((r) => r.meta.from ?? '(none)'))];
  return { content: lines.join('\n'), meta: { ids: records.map((r) => r.meta.id).join(' '), from: froms.join(' ') } };
}

/**
 * Who sent it, as far as the relay can tell (spec §8d): a signed hub
 * channel verified the name; a named stdio server only stated it; any other
 * from: is the record's own claim.
 */
export function sender(meta: RecordMeta): string {
  const slash = meta.depositedBy.indexOf('/');
  const channelAgent = slash < 0 ? null : meta.depositedBy.slice(slash + 1);
  if (meta.depositedBy.startsWith('http/') || meta.depositedBy.startsWith('mcp/')) {
    return `sent by ${channelAgent} (deposited-by ${meta.depositedBy}: verified by signature)`;
  }
  if (meta.agent !== undefined) return `sent by ${meta.agent} (deposited-by ${meta.depositedBy}, agent: ${meta.agent}: stated by a local server, not verified)`;
  return `from: ${meta.from ?? '(none)'} (deposited-by ${meta.depositedBy}: the record's own claim, not verified)`;
}

/**
 * The one change made to a body shown here: `</channel` becomes `<\/channel`,
 * so no record can end the host's <channel> frame and write text outside it.
 * The fence already marks every line inside as the record's; this keeps the
 * host's own frame whole too. get_relay returns the exact bytes.
 */
function guardHostFrame(text: string): string {
  return text.replace(/<\/(channel)/gi, '<\\/$1');
}
