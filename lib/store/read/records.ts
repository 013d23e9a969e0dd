/**
 * One record read back from disk: the file's exact bytes (deposit header,
 * `---`, record), its digest checked, through the read gate (at most so
 * many record files open at once: an amplification guard, docs/security.md).
 */
import { asRelayError, damagedRecord, isRelayError, RelayError } from '../../errors.js';
import { splitRecordFile } from '../../model/deposit.js';
import type { IdShape } from '../../model/ids.js';
import type { IdState, RecordIndex } from '../../model/record-index.js';
import type { CorpusPaths } from '../../disk/paths.js';
import { NotARecordFile, type RecordReader } from '../../disk/record-file.js';
import type { RecordBytes } from '../follow/subscription.js';
import type { Peers } from '../hear/peers.js';
import type { CorpusIndexer } from '../index/corpus-indexer.js';
import type { ReadGate } from './read-gate.js';

export interface RecordReadParts {
  index: RecordIndex;
  indexer: Pick<CorpusIndexer, 'dropVanished'>;
  peers: Pick<Peers, 'hear'>;
  shape: IdShape;
  paths: CorpusPaths;
  maxRecordBytes: number;
  reader: RecordReader;
  gate: ReadGate;
}

/** A record file read and checked once: the whole file, and the record's own bytes within it. */
export interface CheckedFile extends RecordBytes {
  file: Buffer;
}

export class RecordReads {
  constructor(private readonly parts: RecordReadParts) {}

  /** The file for `id`, read once and its digest checked once; not_found or damaged otherwise. */
  async read(id: string): Promise<CheckedFile> {
    const { shape, index, paths, reader, maxRecordBytes } = this.parts;
    const n = shape.parseRecordId(id);
    if (n === null) throw this.notFound(id, 'UNKNOWN');
    let file: Buffer;
    try {
      file = await this.parts.gate.run(() => reader.read(paths.record(id), maxRecordBytes));
    } catch (err) {
      if (err instanceof NotARecordFile) throw damagedRecord(err.why, id);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw asRelayError(err);
      this.parts.indexer.dropVanished(n);
      throw this.notFound(id, index.state(n));
    }
    let checked: CheckedFile;
    try {
      const { deposit, record } = splitRecordFile(file);
      checked = { file, record, digest: deposit.digest };
    } catch (err) {
      throw isRelayError(err) && err.code === 'damaged' ? damagedRecord(String(err.details.why), id) : asRelayError(err);
    }
    // A peer's record read before it was heard: index it, and every id below it.
    if (!index.has(n)) this.parts.peers.hear(n);
    return checked;
  }

  /** The size of the record in `id`'s file, from its size and head only (an omitted wait item's `size`). */
  sizeOf(id: string): Promise<number | null> {
    const { paths, reader, maxRecordBytes } = this.parts;
    return this.parts.gate.run(() => reader.sizeOf(paths.record(id), maxRecordBytes));
  }

  exists(id: string): { id: string; state: IdState } {
    return { id, state: this.parts.index.state(this.parts.shape.parseRecordId(id)) };
  }

  private notFound(id: string, state: IdState): RelayError {
    const why =
      state === 'KNOWN_MISSING' ? 'is KNOWN_MISSING: a held record names it, but its bytes are not here'
      : state === 'PRESENT' ? 'is PRESENT but could not be read'
      : `is UNKNOWN: nothing held here mentions it (ids are ${this.parts.shape.describe}, matched literally)`;
    return new RelayError('not_found', `${id} ${why}. List the held ids with list_relays (GET /relays, or \`p-e-relay ls\`).`, { id, state });
  }
}
