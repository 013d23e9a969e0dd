/**
 * What a stored record's parsed parts say, as the index answers them: its
 * claims (nothing claimed when the record no longer parses), from the whole
 * record or from its header lines only, and its metadata.
 */
import type { Deposit } from '../../model/deposit.js';
import type { IdShape } from '../../model/ids.js';
import { parseRecord, type RecordClaims } from '../../model/record.js';
import type { RecordMeta } from '../../model/record-index.js';

/** A record's metadata as the index gives it (RecordIndex entryOf): refs are the other named ids, distinct, in first-seen order. */
export function metaOf(n: number, deposit: Deposit, claims: RecordClaims, format: (n: number) => string): RecordMeta {
  const refs: string[] = [];
  const named: number[] = claims.parent === null ? [] : [claims.parent];
  for (const m of claims.named) {
    if (named.includes(m)) continue;
    named.push(m);
    refs.push(format(m));
  }
  return {
    id: format(n),
    kind: claims.kind,
    from: claims.from,
    to: claims.to,
    parent: claims.parent === null ? null : format(claims.parent),
    refs,
    depositedBy: deposit.depositedBy,
    ...(deposit.agent === undefined ? {} : { agent: deposit.agent }),
    provenance: deposit.provenance,
    depositedAt: deposit.depositedAt,
    digest: deposit.digest,
  };
}

/** A stored record's claims; one that no longer parses still counts as held, just with nothing claimed. */
export function claimsOf(record: Buffer, shape: IdShape): RecordClaims {
  try {
    return parseRecord(record, shape, Infinity);
  } catch {
    return { kind: null, from: null, to: null, parent: null, named: [] };
  }
}

/**
 * parseRecord of the lines up to the first empty one, which are all it reads
 * claims from; the body is not decoded. Where the whole record would be
 * refused (a NUL in its body), the check finds it claiming nothing.
 */
export function headerClaims(record: Buffer, shape: IdShape): RecordClaims {
  const lf = record.indexOf('\n\n');
  const crlf = record.indexOf('\n\r\n');
  const blank = lf === -1 ? crlf : crlf === -1 ? lf : Math.min(lf, crlf);
  return claimsOf(blank === -1 ? record : record.subarray(0, blank + 1), shape);
}
