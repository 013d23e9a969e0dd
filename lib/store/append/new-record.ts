/**
 * A new record stored, in one pass down the wings and back: encoded (the
 * deposit header above the bytes), published under an id (id-allocator.ts:
 * every id below it looked at, linked, noted in the issued log and rung in
 * that turn, made durable), indexed, and announced to this process's
 * followers. No step calls back into an earlier one.
 */
import { asRelayError, type RelayError } from '../../errors.js';
import { buildRecordFile, type Deposit } from '../../model/deposit.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordClaims } from '../../model/record.js';
import { lostMountRefusal } from '../../disk/lost-mount.js';
import type { CorpusPaths } from '../../disk/paths.js';
import type { CorpusFacts } from '../corpus-facts.js';
import type { Visibility } from '../follow/visibility.js';
import type { CorpusIndexer } from '../index/corpus-indexer.js';
import type { AppendOptions, AppendResult } from '../store-options.js';
import type { IdAllocator } from './id-allocator.js';

export interface NewRecordParts {
  shape: IdShape;
  paths: CorpusPaths;
  ids: Pick<IdAllocator, 'publish'>;
  indexer: Pick<CorpusIndexer, 'add' | 'ingest'>;
  visibility: Pick<Visibility, 'indexed'>;
  facts: Pick<CorpusFacts, 'entryNotDurable' | 'type' | 'shared'>;
}

/** A checked record to store: its bytes and claims, their digest, the id proposed for it (or null), the call's options. */
export interface NewRecord {
  bytes: Uint8Array;
  claims: RecordClaims;
  digest: string;
  proposed: number | null;
  options: AppendOptions;
  /** The agent the deposit header states (appender.ts `check`). */
  statedAgent: string | undefined;
}

export class NewRecords {
  constructor(private readonly parts: NewRecordParts) {}

  /** Stores one record under a new id (or the proposed one) and answers once it is durable, indexed and announced. */
  async store({ bytes, claims, digest, proposed, options, statedAgent }: NewRecord): Promise<AppendResult> {
    const { ids, indexer, visibility, shape, facts } = this.parts;
    const deposit = depositFor(options, digest, statedAgent);
    // What the issued line says of the record, so that the other processes learn whom it is for without opening it.
    const hint = { claims, depositedBy: deposit.depositedBy, idempotencyKey: deposit.idempotencyKey, agent: deposit.agent, digest };
    let n: number | null = null;
    try {
      n = await ids.publish(buildRecordFile(deposit, bytes), proposed === null ? null : { n: proposed, digest }, hint);
      const meta = indexer.add(n, deposit, claims);
      visibility.indexed(n, meta === null ? undefined : { meta, bytes: { record: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), digest } });
    } catch (err) {
      // Published, then a later step failed: the record is on disk all the same; index it from there.
      if (n !== null) {
        await indexer.ingest(n).catch(() => {});
        visibility.indexed(n);
      }
      throw this.refusal(err);
    }
    const result: AppendResult = { id: shape.format(n), digest, depositedBy: deposit.depositedBy, provenance: deposit.provenance, depositedAt: deposit.depositedAt };
    if (facts.entryNotDurable) result.durability = facts.entryNotDurable;
    return result;
  }

  /** What an append's failure tells its caller: a lost mount by name (safe to retry under its key), else its code. */
  refusal(err: unknown): RelayError {
    const { paths, facts } = this.parts;
    return lostMountRefusal(err, { corpus: paths.corpus, type: facts.type }, facts.shared) ?? asRelayError(err);
  }
}

/** The deposit header an append writes above the record. */
function depositFor(options: AppendOptions, digest: string, statedAgent: string | undefined): Deposit {
  const deposit: Deposit = { provenance: options.provenance ?? 'as-received', depositedBy: options.depositedBy, depositedAt: new Date().toISOString(), digest };
  if (options.idempotencyKey !== undefined) deposit.idempotencyKey = options.idempotencyKey;
  if (statedAgent !== undefined) deposit.agent = statedAgent;
  return deposit;
}
