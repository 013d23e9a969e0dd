/**
 * A look at a few records before an index snapshot is believed.
 *
 * A snapshot whose directory stamp still matches is answered from without
 * reading a record (snapshot-keeper.ts): that is its whole point. But the
 * file is only `.state/` state, and one copied from another corpus, left by
 * an older build, or edited would then be served as if the records said it.
 * Reading every record is the scan the snapshot saves; reading the newest
 * few is a handful of small reads, and catches a snapshot that is not this
 * corpus's. Whatever it cannot catch (one old record's claims changed in
 * the snapshot alone) `p-e-relay verify` finds, as it finds damaged records.
 */
import { splitRecordFile } from '../../model/deposit.js';
import type { IdShape } from '../../model/ids.js';
import type { IndexImage } from '../../model/record-index.js';
import { parseRecord } from '../../model/record.js';
import type { CorpusPaths } from '../../disk/paths.js';
import { readRecordFileSync } from '../../disk/record-file.js';

/** How many of the newest records are read against the snapshot. */
export const SPOT_CHECKS = 8;
const DIGEST_BYTES = 32;

/** Why the image does not match the records it names (null: the newest agree with it). A record gone from disk is the listing's business, not a mismatch. */
export function spotCheck(image: IndexImage, paths: CorpusPaths, shape: IdShape, maxRecordBytes: number): string | null {
  const text = (n: number) => (n === 0 ? null : (image.strings[n - 1] ?? null));
  const odd = new Map(image.odd.map(([at, , digest]) => [at, digest]));
  for (let at = image.ids.length - 1; at >= Math.max(0, image.ids.length - SPOT_CHECKS); at--) {
    const id = shape.format(image.ids[at]!);
    let file: Buffer;
    try {
      file = readRecordFileSync(paths.record(id), maxRecordBytes);
    } catch {
      continue; // gone or unreadable: the store's own checks deal with it
    }
    let deposit, claims;
    try {
      const split = splitRecordFile(file);
      deposit = split.deposit;
      claims = parseRecord(split.record, shape, Infinity);
    } catch {
      continue; // damaged: likewise
    }
    const digest = odd.get(at) ?? `sha256:${Buffer.from(image.digest.buffer, image.digest.byteOffset + at * DIGEST_BYTES, DIGEST_BYTES).toString('hex')}`;
    if (digest !== deposit.digest) return `${id}'s digest is ${deposit.digest} on disk and ${digest} in the snapshot`;
    for (const [name, column] of [['kind', image.kind], ['from', image.from], ['to', image.to]] as const) {
      if (text(column[at]!) !== claims[name]) return `${id}'s ${name}: is ${JSON.stringify(claims[name])} on disk and ${JSON.stringify(text(column[at]!))} in the snapshot`;
    }
  }
  return null;
}
