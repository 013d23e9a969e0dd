// Reads a stored record file in the browser, the way lib/deposit.ts and
// lib/record.ts read it on the server: the deposit header down to the first
// line that is exactly "---", then the record as the agent sent it. Pure: no
// DOM, no network.

const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
const LF = 0x0a;
export const FIRST_LINE = '@p-e/x0';

/** The store's id shape, learnt from the ids the hub lists (four digits until one is seen). */
let idWidth = 4;
export function learnIdWidth(id) {
  const match = /^relay-([0-9]{4,9})$/.exec(id ?? '');
  if (match) idWidth = match[1].length;
}
export function isRecordId(text) {
  return typeof text === 'string' && text.length === 6 + idWidth && /^relay-[0-9]+$/.test(text) && !/^relay-0+$/.test(text);
}

/** Splits file bytes at the first "---" line: { header, record } views, or null when there is none. */
export function splitFile(bytes) {
  let start = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(LF, start);
    if (end === -1) return null;
    if (end - start === 3 && bytes[start] === 0x2d && bytes[start + 1] === 0x2d && bytes[start + 2] === 0x2d) {
      return { header: bytes.subarray(0, end + 1), record: bytes.subarray(end + 1) };
    }
    start = end + 1;
  }
  return null;
}

/** The deposit header's fields (first of a repeated key wins). */
export function depositFields(headerBytes) {
  const fields = {};
  for (const line of decoder.decode(headerBytes).split('\n')) {
    const colon = line.indexOf(': ');
    if (colon <= 0) continue;
    const key = line.slice(0, colon);
    if (!(key in fields)) fields[key] = line.slice(colon + 2);
  }
  return {
    provenance: fields['provenance'] ?? null,
    depositedBy: fields['deposited-by'] ?? null,
    depositedAt: fields['deposited-at'] ?? null,
    digest: fields['digest'] ?? null,
    // Only present when the append carried one (spec §8b); other unknown keys are ignored.
    idempotencyKey: fields['idempotency-key'] ?? null,
  };
}

/** What the record claims: kind, from, to, its parent and refs (ids of this store's shape only). */
export function recordClaims(recordBytes) {
  const lines = decoder.decode(recordBytes).split('\n');
  const strip = (line) => (line.endsWith('\r') ? line.slice(0, -1) : line);
  const claims = { wellFormed: strip(lines[0] ?? '') === FIRST_LINE, kind: null, from: null, to: null, parent: null, refs: [] };
  if (!claims.wellFormed) return claims;
  const single = new Map();
  const refValues = [];
  for (let i = 1; i < lines.length; i++) {
    const line = strip(lines[i]);
    if (line === '') break;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'ref') refValues.push(value);
    else if (!single.has(key)) single.set(key, value);
  }
  const nonEmpty = (v) => (v === undefined || v === '' ? null : v);
  claims.kind = nonEmpty(single.get('kind'));
  claims.from = nonEmpty(single.get('from'));
  claims.to = nonEmpty(single.get('to'));
  claims.parent = idsIn(single.get('parent') ?? '')[0] ?? null;
  const refs = new Set();
  for (const value of refValues) for (const id of idsIn(value)) if (id !== claims.parent) refs.add(id);
  claims.refs = [...refs];
  return claims;
}

function idsIn(value) {
  return value.split(/[\s,]+/).filter(isRecordId);
}

/** Everything the page shows about one file: deposit, claims, the text, and both halves' bytes. */
export function readFile(bytes) {
  const split = splitFile(bytes);
  if (!split) return null;
  return {
    deposit: depositFields(split.header),
    claims: recordClaims(split.record),
    header: split.header,
    record: split.record,
    headerText: decoder.decode(split.header),
    recordText: decoder.decode(split.record),
  };
}
