/**
 * include_bytes (spec §8a): a wait answer that carries the records' own bytes,
 * so wait-then-get is one call. The bytes of one answer are capped so that a
 * burst of large records cannot make one answer huge: items are filled in
 * id order until the budget would be passed, and every item from there on
 * says `bytesOmitted: true` (fetch it with get_relay) and its record's `size`
 * in bytes (read from the file's size and head, not its bytes), so that an
 * agent can tell one call's worth from a record it must fetch alone.
 */
import type { AppearedRecord } from './waiters.js';
import type { RecordBytes } from './subscription.js';

export const INLINE_BYTES_BUDGET = 64 * 1024;

export interface InlineSources {
  /** The bytes the wait heard land with their records, by id: inlined as they are, no file read. */
  heard?: ReadonlyMap<string, RecordBytes>;
  /** Reads an item's file once, its digest checked once. */
  read(id: string): Promise<RecordBytes>;
  /** An omitted item's record size, from its file's size and head. */
  sizeOf(id: string): Promise<number | null>;
}

/** Inlines each item's record bytes while the budget lasts: those heard with the item, else read from its file. */
export async function inlineBytes(items: AppearedRecord[], from: InlineSources, budget = INLINE_BYTES_BUDGET): Promise<AppearedRecord[]> {
  const out: AppearedRecord[] = [];
  let left = budget;
  const omitted = async (item: AppearedRecord, size?: number | null): Promise<AppearedRecord> => {
    size ??= await from.sizeOf(item.id).catch(() => null);
    return size === null ? { ...item, bytesOmitted: true } : { ...item, bytesOmitted: true, size };
  };
  for (const item of items) {
    if (left < 0) {
      out.push(await omitted(item));
      continue;
    }
    let bytes = from.heard?.get(item.id);
    try {
      bytes ??= await from.read(item.id);
    } catch {
      // Vanished or damaged since it was indexed: get_relay will say which, and no size is claimed.
      out.push({ ...item, bytesOmitted: true });
      continue;
    }
    const { record, digest } = bytes;
    if (record.length > left) {
      left = -1; // once one does not fit, the rest are omitted too: the inlined items stay a prefix in id order
      out.push(await omitted(item, record.length));
      continue;
    }
    left -= record.length;
    out.push({ ...item, bytes: record.toString('utf8'), digest });
  }
  return out;
}
