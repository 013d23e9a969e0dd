/**
 * What `verify` says about `.state/` (docs/security.md says why): the two files a
 * store believes without reading every record, checked against the records.
 *
 * - `.state/index`, the index snapshot. A store answers from it once its
 *   newest few records agree with it (snapshot-check.ts); here every record
 *   it describes is compared, digest, kind, from, to and deposited-by, and
 *   the idempotency key it says each was stored under; a row with no file,
 *   and a high-water mark past the records and the issued log, are named
 *   too. One that disagrees is wrong for whoever opens the store next:
 *   remove it (one scan rebuilds it).
 * - `.state/issued`, the issued-id log. Every append notes its id, so an id
 *   in the log with no record here is a record that vanished; a line far
 *   past the records is one the store ignores (issued-log.ts) or, believed,
 *   a high-water that ends assignment early. A line's claims about its record
 *   (model/issued-line.ts) are what the store's other processes held it by
 *   until a call read the file: one that is not the record's is named.
 *
 * Both are this machine's cache, never mirrored: a mirror or a clone has
 * neither, and nothing is said.
 */
import { createHash } from 'node:crypto';
import { readStateFile } from '../disk/state-file.js';
import type { Deposit } from '../model/deposit.js';
import { sortedIndexOf, type IdShape } from '../model/ids.js';
import { parseRecord, type RecordClaims } from '../model/record.js';
import { DIGEST_BYTES } from '../model/index-columns.js';
import type { IndexImage } from '../model/record-index.js';
import { IssuedLog, MAX_ISSUED_READ, readSnapshot } from '../store/inspect.js';
import { idempotencyScope, ownAnswerKey } from '../model/idempotency-keys.js';
import { formatIssuedLine, issuedLineId, parseIssuedLine, type IssuedHint } from '../model/issued-line.js';
import type { CorpusPaths } from '../disk/paths.js';

export interface StateFindings {
  /** null: there is no snapshot. */
  index: {
    /** Why the store would not use it at all (another format, torn, another width), or null. */
    unusable: string | null;
    records: number;
    /** Records whose snapshot row says something their file does not (the first NAMED_AT_MOST). */
    disagree: { id: string; why: string }[];
    /** How many disagree in all. */
    disagreeing: number;
  } | null;
  /** null: there is no issued log. */
  issued: {
    /** The highest line, as written. */
    highest: string | null;
    /** The high-water a store believes from it (implausible lines ignored). */
    believed: string | null;
    /** Lines a store ignores: far past every id before them, with no record near. */
    ignored: string[];
    /** Ids the log says were issued whose record is not here (vanished; the first NAMED_AT_MOST). */
    vanished: string[];
    /** How many vanished in all. */
    vanishedCount: number;
    /** Records whose line claims other than the record does (the first NAMED_AT_MOST). */
    misdescribed: string[];
    /** How many in all. */
    misdescribedCount: number;
  } | null;
}

/** At most this many ids named per kind of finding; the count says the rest. */
export const NAMED_AT_MOST = 20;

export class StateAudit {
  private readonly disagree: { id: string; why: string }[] = [];
  private disagreeing = 0;
  private readonly misdescribed: string[] = [];
  private misdescribedCount = 0;

  private constructor(
    private readonly paths: CorpusPaths,
    private readonly shape: IdShape,
    private readonly image: IndexImage | null,
    private readonly index: StateFindings['index'],
    /** Each issued line's claims about its record, as a fingerprint (a million lines held as numbers, not objects). */
    private readonly described: Map<number, number>,
    /** The snapshot's idempotency keys, by the record each names (a snapshot from one writer has one per record). */
    private readonly keys: Map<number, string[]>,
  ) {}

  static async open(paths: CorpusPaths, shape: IdShape): Promise<StateAudit> {
    const [read, described] = await Promise.all([readSnapshot(paths.snapshot, shape.width), describedIn(paths.issued, shape)]);
    const keys = new Map<number, string[]>();
    if ('snapshot' in read) {
      for (const [n, scope] of read.snapshot.keys) keys.set(n, [...(keys.get(n) ?? []), scope]);
      const index = { unusable: null, records: read.snapshot.image.ids.length, disagree: [], disagreeing: 0 };
      return new StateAudit(paths, shape, read.snapshot.image, index, described, keys);
    }
    if (read.refused === 'there is none') return new StateAudit(paths, shape, null, null, described, keys);
    return new StateAudit(paths, shape, null, { unusable: read.refused, records: 0, disagree: [], disagreeing: 0 }, described, keys);
  }

  /** A whole record: do the snapshot and its issued line describe it as its file does? */
  see(n: number, deposit: Deposit, record: Buffer): void {
    let claims: RecordClaims | null = null;
    try {
      claims = parseRecord(record, this.shape, Infinity);
    } catch {
      // a record the store cannot read claims nothing; its own checks deal with it
    }
    const line = this.described.get(n);
    if (line !== undefined && claims !== null && line !== fingerprint(this.shape, n, { claims, ...deposit })) {
      this.misdescribedCount++;
      if (this.misdescribed.length < NAMED_AT_MOST) this.misdescribed.push(this.shape.format(n));
    }
    const image = this.image;
    if (image === null) return;
    const own = deposit.idempotencyKey === undefined ? null : idempotencyScope(deposit.depositedBy, deposit.idempotencyKey, deposit.agent, deposit.digest, ownAnswerKey(deposit.depositedBy, deposit.agent, claims, this.shape));
    for (const scope of this.keys.get(n) ?? []) {
      if (scope !== own) this.disagrees(n, `the snapshot says it was stored under the idempotency key ${JSON.stringify(scope.slice(scope.indexOf('\n') + 1))} ` +
        `of ${JSON.stringify(scope.slice(0, scope.indexOf('\n')))}, and its file ${own === null ? 'carries no key' : 'carries another'}`);
    }
    const at = sortedIndexOf(image.ids, n);
    if (at === -1) return; // not in the snapshot: the store reads it
    const why = this.difference(image, at, deposit, claims);
    if (why !== null) this.disagrees(n, why);
  }

  private disagrees(n: number, why: string): void {
    this.disagreeing++;
    if (this.disagree.length < NAMED_AT_MOST) this.disagree.push({ id: this.shape.format(n), why });
  }

  private difference(image: IndexImage, at: number, deposit: Deposit, claims: RecordClaims | null): string | null {
    const text = (k: number) => (k === 0 ? null : (image.strings[k - 1] ?? null));
    const odd = image.odd.find(([p]) => p === at);
    const digest = odd?.[2] ?? `sha256:${Buffer.from(image.digest.buffer, image.digest.byteOffset + at * DIGEST_BYTES, DIGEST_BYTES).toString('hex')}`;
    if (digest !== deposit.digest) return `digest is ${deposit.digest} in the file and ${digest} in the snapshot`;
    const label = deposit.agent === undefined ? deposit.depositedBy : `${deposit.depositedBy}\n${deposit.agent}`;
    if (text(image.depositedBy[at]!) !== label) return `deposited-by is ${JSON.stringify(label)} in the file and ${JSON.stringify(text(image.depositedBy[at]!))} in the snapshot`;
    if (claims === null) return null;
    for (const [name, column] of [['kind', image.kind], ['from', image.from], ['to', image.to]] as const) {
      if (text(column[at]!) !== claims[name]) return `${name}: is ${JSON.stringify(claims[name])} in the file and ${JSON.stringify(text(column[at]!))} in the snapshot`;
    }
    return null;
  }

  /** The findings, once every record has been seen; `held` is every held id, ascending. */
  async finish(held: readonly number[]): Promise<StateFindings> {
    const issued = await this.issued(held);
    const image = this.image;
    if (image !== null) {
      // Rows for files that are not here: a store would hold them (exists: PRESENT) until its listing dropped them.
      for (const n of image.ids) if (sortedIndexOf(held, n) === -1) this.disagrees(n, 'the snapshot holds a row for it, and there is no such file');
      const highest = Math.max(held.length === 0 ? 0 : held[held.length - 1]!, issued === null ? 0 : (this.shape.parseRecordId(issued.believed ?? '') ?? 0));
      if (image.highWater > highest) {
        this.disagreeing++;
        this.disagree.push({ id: this.shape.format(image.highWater), why: `the snapshot's high-water mark is ${this.shape.format(image.highWater)}, ` +
          `and neither the records nor .state/issued say an id past ${this.shape.format(highest)} was issued` });
      }
    }
    const index = this.index === null ? null : { ...this.index, disagree: this.disagree, disagreeing: this.disagreeing };
    return { index, issued };
  }

  private async issued(held: readonly number[]): Promise<StateFindings['issued']> {
    const text = await issuedText(this.paths.issued);
    if (text === null) return null;
    const ignoredLines: string[] = [];
    const warnings = { debug() {}, info() {}, error() {}, warn: () => {} };
    const log = new IssuedLog(this.paths.issued, this.shape, warnings);
    const believed = await log.read();
    await log.close();
    let highest = 0;
    const issued = new Set<number>();
    for (const written of text.split('\n')) {
      const n = issuedLineId(written, this.shape);
      if (n === null) continue;
      issued.add(n);
      if (n > highest) highest = n;
    }
    const heldSet = new Set(held);
    const vanished: string[] = [];
    let vanishedCount = 0;
    for (const n of [...issued].sort((a, b) => a - b)) {
      if (n > believed) {
        if (ignoredLines.length < NAMED_AT_MOST) ignoredLines.push(this.shape.format(n));
        continue;
      }
      if (heldSet.has(n)) continue;
      vanishedCount++;
      if (vanished.length < NAMED_AT_MOST) vanished.push(this.shape.format(n));
    }
    return {
      highest: highest === 0 ? null : this.shape.format(highest),
      believed: believed === 0 ? null : this.shape.format(believed),
      ignored: ignoredLines,
      vanished,
      vanishedCount,
      misdescribed: this.misdescribed,
      misdescribedCount: this.misdescribedCount,
    };
  }
}

/** Each issued line's claims about its record, by id, as a fingerprint; none where there is no log. */
async function describedIn(file: string, shape: IdShape): Promise<Map<number, number>> {
  const described = new Map<number, number>();
  const text = (await issuedText(file)) ?? '';
  for (const written of text.split('\n')) {
    const line = parseIssuedLine(written, shape);
    if (line?.hint) described.set(line.n, fingerprint(shape, line.n, line.hint));
  }
  return described;
}

/** 48 bits of the line a hint makes (formatIssuedLine reads only a hint's own fields): equal hints make equal lines. */
function fingerprint(shape: IdShape, n: number, hint: IssuedHint): number {
  return createHash('sha256').update(formatIssuedLine(shape, n, hint)).digest().readUIntBE(0, 6);
}

/** The issued log's text (its last MAX_ISSUED_READ bytes, whole lines), read as a store reads it; null when there is no such regular file. */
async function issuedText(file: string): Promise<string | null> {
  const got = await readStateFile(file, { max: MAX_ISSUED_READ, tail: true });
  if (got.kind !== 'bytes') return null;
  const text = got.bytes.toString('latin1');
  return got.offset > 0 ? text.slice(text.indexOf('\n') + 1) : text;
}
