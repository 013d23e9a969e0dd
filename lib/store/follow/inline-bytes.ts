/**
 * include_bytes (SPEC §8a): a wait answer that carries the records' own bytes,
 * so wait-then-get is one call. The bytes of one answer are capped so that a
 * burst of large records cannot make one answer huge: items are filled in
 * id order until the budget would be passed, and every item from there on
 * says `bytesOmitted: true` (fetch it with get_relay) and its record's `size`
 * in bytes (read from the file's size and head, not its bytes), so that an
 * agent can tell one call's worth from a record it must fetch alone.
 */
import { splitRecordFile } from '../../model/deposit.js';
import type { AppearedRecord } from '../hear/waiters.js';

export const INLINE_BYTES_BUDGET = 64 * 1024;

/** Reads each item's file (digest re-checked by `read`) and inlines its record bytes while the budget lasts. */
export async function inlineBytes(items: AppearedRecord[], read: (id: string) => Promise<Buffer>, sizeOf: (id: string) => Promise<number | null>, budget = INLINE_BYTES_BUDGET): Promise<AppearedRecord[]> {
  const out: AppearedRecord[] = [];
  let left = budget;
  const omitted = async (item: AppearedRecord, size?: number | null): Promise<AppearedRecord> => {
    size ??= await sizeOf(item.id).catch(() => null);
    return size === null ? { ...item, bytesOmitted: true } : { ...item, bytesOmitted: true, size };
  };
  for (const item of items) {
    if (left < 0) {
      out.push(await omitted(item));
      continue;
    }
    let split;
    try {
      split = splitRecordFile(await read(item.id));
    } catch {
      // Vanished or damaged since it was indexed: get_relay will say which, and no size is claimed.
      out.push({ ...item, bytesOmitted: true });
      continue;
    }
    const { record, deposit } = split;
    if (record.length > left) {
      left = -1; // once one does not fit, the rest are omitted too: the inlined items stay a prefix in id order
      out.push(await omitted(item, record.length));
      continue;
    }
    left -= record.length;
    out.push({ ...item, bytes: record.toString('utf8'), digest: deposit.digest });
  }
  return out;
}
