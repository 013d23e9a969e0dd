/**
 * A checkpoint: an ordinary record the hub appends now and then, so that any
 * copy of the corpus (a mirror, a clone, a backup) can prove it holds every
 * record the hub held, byte for byte, up to a point (docs/format.md):
 *
 *   @p-e/x0
 *   kind: checkpoint
 *   from: hub
 *   previous: relay-0011 sha256:<the chain of that checkpoint>   (or "none")
 *   covers: relay-0012 relay-0020
 *   records: 9
 *   chain: sha256:<64 hex>
 *   signature: hmac-sha256 hub <64 hex>                          (when the hub has a key)
 *
 *   Records held from relay-0012 to relay-0020, each with the first 16 hex digits of its digest.
 *   relay-0012 1a2b3c4d5e6f7a8b
 *   …
 *
 * `chain` is sha256 of the previous checkpoint's chain (64 zeros for the
 * first) and a line `ID sha256:<full digest>` per listed record, each line
 * ending in LF — so it chains every record since the first checkpoint, and a
 * reader can recompute it with sed and sha256sum. The body's short digests
 * only say *which* record differs; the chain is what proves. Pure: no disk
 * (node:crypto is fetched on first use, as in deposit.ts).
 */
import type { RecordFilter } from './filter.js';
import type { IdShape } from './ids.js';
import { FIRST_LINE } from './record.js';
import type { RecordMeta } from './record-index.js';

export const CHECKPOINT_KIND = 'checkpoint';
/** The deposited-by of a checkpoint: the hub itself, no channel. A `kind: checkpoint` record deposited by anything else is an agent's, and is no checkpoint. */
export const CHECKPOINT_DEPOSITOR = 'hub';
export const CHECKPOINT_FROM = 'hub';
/** The index's first look for checkpoints: by kind (isCheckpoint then checks who deposited it). */
export const CHECKPOINT_FILTER: RecordFilter = { kind: new Set([CHECKPOINT_KIND]) };

/** A hub checkpoint, as the index describes it: kind checkpoint and deposited by the hub itself. */
export function isCheckpoint(meta: RecordMeta): boolean {
  return meta.kind === CHECKPOINT_KIND && meta.depositedBy === CHECKPOINT_DEPOSITOR;
}

export const GENESIS_CHAIN = `sha256:${'0'.repeat(64)}`;
/** Hex digits of each record's digest in the body: enough to name the record that differs, not to prove it (the chain does). */
export const SHORT_DIGEST_HEX = 16;
/** At most this many records in one checkpoint (~28 bytes each: well under the 1 MiB record limit). */
export const MAX_CHECKPOINT_RECORDS = 10_000;

/** The checkpoint before this one: its id (0 for none) and its chain. */
export interface ChainLink {
  id: number;
  chain: string;
}

export interface CheckpointEntry {
  n: number;
  /** The full `sha256:…` digest. */
  digest: string;
}

export interface Checkpoint {
  previous: ChainLink;
  first: number;
  last: number;
  chain: string;
  signature: { key: string; sig: string } | null;
  /** Each listed record and the first SHORT_DIGEST_HEX hex digits of its digest, in id order. */
  listed: { n: number; short: string }[];
}

/** sha256 over the previous chain and one `ID DIGEST` line per record (see the top of this file). */
export function chainOf(previous: string, entries: readonly CheckpointEntry[], shape: IdShape): string {
  const { createHash } = process.getBuiltinModule('node:crypto');
  const hash = createHash('sha256').update(`${previous}\n`);
  for (const e of entries) hash.update(`${shape.format(e.n)} ${e.digest}\n`);
  return `sha256:${hash.digest('hex')}`;
}

/**
 * What the hub's key signs: the range and the chain (which commits to the
 * previous checkpoint and every listed digest). The leading words keep it
 * from ever being the text a request signature covers (`METHOD\nts\nhash`).
 */
export function signedText(first: string, last: string, chain: string): string {
  return `p-e-relay checkpoint ${first} ${last} ${chain}`;
}

export function signCheckpoint(key: Uint8Array, first: string, last: string, chain: string): string {
  return process.getBuiltinModule('node:crypto').createHmac('sha256', key).update(signedText(first, last, chain)).digest('hex');
}

export interface CheckpointInput {
  previous: ChainLink;
  entries: readonly CheckpointEntry[];
  /** The hub's key and its name in keys/ (null: unsigned). */
  signer: { name: string; key: Uint8Array } | null;
}

/** The record bytes of a checkpoint over `entries` (non-empty, ascending). */
export function buildCheckpoint(input: CheckpointInput, shape: IdShape): Buffer {
  const { previous, entries, signer } = input;
  const first = shape.format(entries[0]!.n);
  const last = shape.format(entries[entries.length - 1]!.n);
  const chain = chainOf(previous.chain, entries, shape);
  const lines = [
    FIRST_LINE,
    `kind: ${CHECKPOINT_KIND}`,
    `from: ${CHECKPOINT_FROM}`,
    `previous: ${previous.id === 0 ? 'none' : `${shape.format(previous.id)} ${previous.chain}`}`,
    `covers: ${first} ${last}`,
    `records: ${entries.length}`,
    `chain: ${chain}`,
  ];
  if (signer) lines.push(`signature: hmac-sha256 ${signer.name} ${signCheckpoint(signer.key, first, last, chain)}`);
  lines.push('', `Records held from ${first} to ${last}, each with the first ${SHORT_DIGEST_HEX} hex digits of its digest.`);
  for (const e of entries) lines.push(`${shape.format(e.n)} ${e.digest.slice(7, 7 + SHORT_DIGEST_HEX)}`);
  return Buffer.from(lines.join('\n') + '\n', 'utf8');
}

const CHAIN = /^sha256:[0-9a-f]{64}$/;
const SHORT = new RegExp(`^[0-9a-f]{${SHORT_DIGEST_HEX}}$`);

/** A checkpoint's fields from its record bytes, or why they are not a checkpoint's. */
export function parseCheckpoint(record: Uint8Array, shape: IdShape): Checkpoint | { invalid: string } {
  const text = Buffer.from(record).toString('utf8');
  const lines = text.split('\n');
  const headers = new Map<string, string>();
  let at = 1;
  for (; at < lines.length && lines[at] !== ''; at++) {
    const line = lines[at]!;
    const colon = line.indexOf(': ');
    if (colon > 0 && !headers.has(line.slice(0, colon))) headers.set(line.slice(0, colon), line.slice(colon + 2));
  }
  if (lines[0] !== FIRST_LINE || headers.get('kind') !== CHECKPOINT_KIND) return { invalid: 'it is not a record of kind checkpoint' };
  const previous = parsePrevious(headers.get('previous'), shape);
  if (previous === null) return { invalid: 'its previous: is neither "none" nor an id and a chain' };
  const [first, last] = (headers.get('covers') ?? '').split(' ').map((id) => shape.parseRecordId(id));
  if (first == null || last == null || first > last) return { invalid: 'its covers: is not two ids, the first not after the second' };
  const chain = headers.get('chain') ?? '';
  if (!CHAIN.test(chain)) return { invalid: 'its chain: is not sha256: and 64 lowercase hex digits' };
  const signature = parseSignature(headers.get('signature'));
  if (signature === undefined) return { invalid: 'its signature: is not "hmac-sha256 KEYNAME HEX"' };
  const listed: Checkpoint['listed'] = [];
  for (at++; at < lines.length; at++) {
    const [id, short, extra] = lines[at]!.split(' ');
    const n = shape.parseRecordId(id);
    if (n === null || short === undefined || extra !== undefined || !SHORT.test(short)) continue; // the explaining sentence
    if (n < first || n > last || (listed.length > 0 && n <= listed[listed.length - 1]!.n)) return { invalid: `it lists ${id} out of order or outside ${shape.format(first)}…${shape.format(last)}` };
    listed.push({ n, short });
  }
  if (Number(headers.get('records')) !== listed.length) return { invalid: `its records: says ${headers.get('records')} and it lists ${listed.length}` };
  return { previous, first, last, chain, signature, listed };
}

function parsePrevious(value: string | undefined, shape: IdShape): ChainLink | null {
  if (value === 'none') return { id: 0, chain: GENESIS_CHAIN };
  const [id, chain, extra] = (value ?? '').split(' ');
  const n = shape.parseRecordId(id);
  return n === null || chain === undefined || extra !== undefined || !CHAIN.test(chain) ? null : { id: n, chain };
}

/** null for no signature line; undefined for one that cannot be read. */
function parseSignature(value: string | undefined): Checkpoint['signature'] | undefined {
  if (value === undefined) return null;
  const m = /^hmac-sha256 ([A-Za-z0-9][A-Za-z0-9._-]{0,63}) ([0-9a-f]{64})$/.exec(value);
  return m ? { key: m[1]!, sig: m[2]! } : undefined;
}

/** The idempotency key of the checkpoint that follows `previous`: one successor per checkpoint, ever, whichever process writes it (spec §8b). */
export function checkpointKey(previous: ChainLink, shape: IdShape): string {
  return `checkpoint-after-${shape.format(previous.id)}`;
}
