/**
 * The deposit header the store puts above every record it keeps:
 *
 *   provenance: as-received
 *   deposited-by: mcp/scout-7
 *   deposited-at: 2026-11-30T01:02:03.456Z
 *   digest: sha256:<hex of the record bytes below the separator>
 *   idempotency-key: <the caller's key>      (only when one was sent, spec §8b)
 *   agent: <name>                            (only from a named stdio server, spec §8d)
 *   ---
 *   <the record, byte for byte>
 *
 * so that `sed '1,/^---$/d' corpus/relay-0042 | sha256sum` checks a record
 * with nothing but standard tools. Pure: no disk here.
 */
import { damagedRecord } from '../errors.js';

export type Provenance = 'as-received' | 'authored';
export const PROVENANCES: readonly Provenance[] = ['as-received', 'authored'];

export interface Deposit {
  provenance: Provenance;
  depositedBy: string;
  depositedAt: string;
  digest: string;
  /** The caller's idempotency key (spec §8b); its scope is `depositedBy`. */
  idempotencyKey?: string;
  /**
   * The agent a named stdio server serves (spec §8d): stated by its operator,
   * not verified. Over HTTP the name is in `depositedBy` already and this is absent.
   */
  agent?: string;
}

const SEPARATOR = Buffer.from('---\n');

// node:crypto is fetched on first use, not imported: a stdio server that only answers
// exists or a wait never loads it (~5–10 ms of start-up, times twenty agents).
// crypto.hash (Node >= 20.12; package.json asks for 20.19) hashes in one
// call without building a Hash object: half the cost for a record of a few
// hundred bytes, and every process of a swarm checks the digest of every
// record it indexes.
export function digestOf(bytes: Uint8Array): string {
  return 'sha256:' + process.getBuiltinModule('node:crypto').hash('sha256', bytes, 'hex');
}

/** The whole file for a record: header, separator, the bytes as received. */
export function buildRecordFile(deposit: Deposit, record: Uint8Array): Buffer {
  const header =
    `provenance: ${deposit.provenance}\n` +
    `deposited-by: ${deposit.depositedBy}\n` +
    `deposited-at: ${deposit.depositedAt}\n` +
    `digest: ${deposit.digest}\n` +
    (deposit.idempotencyKey === undefined ? '' : `idempotency-key: ${deposit.idempotencyKey}\n`) +
    (deposit.agent === undefined ? '' : `agent: ${deposit.agent}\n`);
  return Buffer.concat([Buffer.from(header, 'utf8'), SEPARATOR, record]);
}

export interface SplitFile {
  deposit: Deposit;
  /** The record bytes below the separator (a view into the file's buffer). */
  record: Buffer;
}

/**
 * Splits a stored file at its first `---` line and checks the digest. A file
 * that cannot be split, lacks a key, or whose bytes no longer match is
 * `damaged`: it is never handed out as if it were whole.
 */
export function splitRecordFile(file: Buffer): SplitFile {
  let start = 0;
  const fields = new Map<string, string>();
  for (;;) {
    const end = file.indexOf(0x0a, start);
    if (end === -1) throw damagedRecord('it has no "---" line ending the deposit header');
    const line = file.toString('utf8', start, end);
    start = end + 1;
    if (line === '---') break;
    const colon = line.indexOf(': ');
    if (colon <= 0) throw damagedRecord(`its deposit header has a line that is not "key: value"`);
    const key = line.slice(0, colon);
    if (!fields.has(key)) fields.set(key, line.slice(colon + 2));
  }
  const provenance = fields.get('provenance');
  const depositedBy = fields.get('deposited-by');
  const depositedAt = fields.get('deposited-at');
  const digest = fields.get('digest');
  if (provenance === undefined || depositedBy === undefined || depositedAt === undefined || digest === undefined) {
    throw damagedRecord('its deposit header lacks one of provenance, deposited-by, deposited-at, digest');
  }
  if (!(PROVENANCES as readonly string[]).includes(provenance)) {
    throw damagedRecord(`its provenance "${provenance}" is neither as-received nor authored`);
  }
  const record = file.subarray(start);
  if (digestOf(record) !== digest) throw damagedRecord('its bytes no longer match the digest in its header');
  const deposit: Deposit = { provenance: provenance as Provenance, depositedBy, depositedAt, digest };
  // Any other key is one this version does not know, and is ignored.
  const idempotencyKey = fields.get('idempotency-key');
  if (idempotencyKey !== undefined) deposit.idempotencyKey = idempotencyKey;
  const agent = fields.get('agent');
  if (agent !== undefined) deposit.agent = agent;
  return { deposit, record };
}

