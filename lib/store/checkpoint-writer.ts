/**
 * Writing checkpoints (lib/model/checkpoint.ts): the hub appends one now and
 * then, through the ordinary append path, so that every clone, mirror and
 * git history carries them like any other record.
 *
 * One successor per checkpoint, ever: each is appended under the
 * idempotency key `checkpoint-after-<previous id>`, scoped to deposited-by
 * `hub`, so two hub processes on one corpus (or a hub and `p-e-relay
 * checkpoint`) that race for the same place store one record; the loser is
 * refused idempotency_conflict (or answered `replayed`), follows the record
 * that holds the key, and goes on after it. The chain of checkpoints
 * therefore never forks on one corpus, and a writer that looked in the wrong
 * place for the newest is put right by the key rather than stopped.
 *
 * Cost: a checkpoint reads no record file. Digests come from the index, the
 * previous checkpoint is found among the hub's own (checkpoint-frontier.ts)
 * and read once (then remembered), so writing one costs what its own records cost,
 * not what the corpus holds (bench/sections/checkpoints.ts).
 */
import { isRelayError } from '../errors.js';
import type { Logger } from '../log.js';
import {
  buildCheckpoint,
  CHECKPOINT_DEPOSITOR,
  checkpointKey,
  GENESIS_CHAIN,
  isCheckpoint,
  MAX_CHECKPOINT_RECORDS,
  parseCheckpoint,
  SHORT_DIGEST_HEX,
  type ChainLink,
  type CheckpointEntry,
} from '../model/checkpoint.js';
import { splitRecordFile } from '../model/deposit.js';
import type { RecordMeta } from '../model/record-index.js';
import { newestCheckpoint } from './checkpoint-frontier.js';
import type { RelayStore } from './store.js';

/** The hub's own key (keys/<name>.key), or null for unsigned checkpoints. */
export type CheckpointSigner = () => Promise<{ name: string; key: Uint8Array } | null>;

/** The newest hub checkpoint this store holds: its id, its chain and the last id it covers. */
export interface LatestCheckpoint {
  link: ChainLink;
  last: number;
}

const NONE: LatestCheckpoint = { link: { id: 0, chain: GENESIS_CHAIN }, last: 0 };

export class CheckpointWriter {
  constructor(
    private readonly store: RelayStore,
    private readonly signer: CheckpointSigner,
    private readonly log: Logger,
  ) {}

  /**
   * Appends the checkpoints the held records call for now, and answers their
   * ids: none when nothing but checkpoints landed since the last one, several
   * when more records are uncovered than one checkpoint lists.
   */
  async writeDue(): Promise<string[]> {
    const store = this.store;
    // Every store call first indexes what other processes appended; exists is the cheapest.
    await store.exists(store.shape.format(0));
    const written: string[] = [];
    let previous = await this.latest();
    for (;;) {
      const entries = this.uncovered(previous.last);
      if (entries.length === 0) return written;
      const signer = await this.signer();
      const bytes = buildCheckpoint({ previous: previous.link, entries, signer }, store.shape);
      const key = checkpointKey(previous.link, store.shape);
      let id: string;
      try {
        const result = await store.append(bytes, { depositedBy: CHECKPOINT_DEPOSITOR, idempotencyKey: key });
        if (result.replayed) {
          previous = await this.follow(result.id, key, previous); // another writer stored these very bytes first
          continue;
        }
        id = result.id;
      } catch (err) {
        // Another process wrote the checkpoint that follows this one: it stands, and the next follows it.
        if (!isRelayError(err) || err.code !== 'idempotency_conflict') throw err;
        previous = await this.follow(String(err.details.id), key, previous);
        continue;
      }
      written.push(id);
      const range = `${store.shape.format(entries[0]!.n)}…${store.shape.format(entries[entries.length - 1]!.n)}`;
      const signed = signer ? `, signed with ${signer.name}'s key` : ', unsigned';
      this.log.debug(`checkpoint ${id} covers ${range} (${entries.length} records${signed})`);
      if (entries.length < this.maxEntries()) return written;
      previous = await this.latest();
    }
  }

  /**
   * The checkpoint that holds the key this writer tried (`holder`): the one to follow. Only a hub checkpoint after
   * `previous` will do; anything else means the chain cannot go on from here, and says so rather than stop unheard.
   */
  private async follow(holder: string, key: string, previous: LatestCheckpoint): Promise<LatestCheckpoint> {
    const store = this.store;
    const n = store.shape.parseRecordId(holder);
    const { deposit, record } = splitRecordFile(await store.read(holder));
    const parsed = n === null || deposit.depositedBy !== CHECKPOINT_DEPOSITOR ? null : parseCheckpoint(record, store.shape);
    if (n === null || n <= previous.link.id || parsed === null || 'invalid' in parsed) {
      const why = parsed === null ? `deposited by ${deposit.depositedBy}, not the hub` : 'invalid' in parsed ? `it cannot be read as a checkpoint (${parsed.invalid})` : `it is not after ${store.shape.format(previous.link.id)}`;
      throw new Error(`the checkpoint key ${key} is taken by ${holder}, which no checkpoint can follow: ${why}; ` +
        'no checkpoint can be written until it is looked at (p-e-relay verify)');
    }
    return { link: { id: n, chain: parsed.chain }, last: parsed.last };
  }

  /** Held records after `last`, oldest first, at most one checkpoint's worth; none when they are all checkpoints. */
  private uncovered(last: number): CheckpointEntry[] {
    const entries: CheckpointEntry[] = [];
    let news = false;
    const max = this.maxEntries();
    for (const { n, meta } of this.store.eachHeldAfter(last)) {
      entries.push({ n, digest: meta.digest });
      if (!isCheckpoint(meta)) news = true;
      if (entries.length === max) break;
    }
    return news ? entries : [];
  }

  /** As many records as a checkpoint of this store's record limit can list (about 28 bytes each, plus the header). */
  private maxEntries(): number {
    const line = this.store.shape.format(1).length + 2 + SHORT_DIGEST_HEX;
    return Math.max(1, Math.min(MAX_CHECKPOINT_RECORDS, Math.floor((this.store.maxRecordBytes - 1024) / line)));
  }

  /** The newest hub checkpoint held (checkpoint-frontier.ts finds it from the end of the index). */
  async latest(): Promise<LatestCheckpoint> {
    const newest = await newestCheckpoint(this.store);
    if (newest === null) return NONE;
    const id = this.store.shape.format(newest.n);
    // Starting over from none would only be refused (checkpoint-after-relay-0000 is taken): say why instead.
    if ('invalid' in newest.checkpoint) {
      throw new Error(
        `${id} was deposited as a checkpoint but cannot be read as one (${newest.checkpoint.invalid}); ` +
          'no checkpoint can follow it until it is looked at (p-e-relay verify)',
      );
    }
    return { link: { id: newest.n, chain: newest.checkpoint.chain }, last: newest.checkpoint.last };
  }
}

/** How often the hub writes checkpoints: after `every` records it hears, and at a look every `seconds` for any not covered. */
export interface CheckpointCadence {
  every: number;
  seconds: number;
}

export const DEFAULT_CADENCE: CheckpointCadence = { every: 1000, seconds: 300 };

/**
 * A serving process's checkpoints: counts the records it hears land and
 * writes when `every` have, and looks every `seconds` in case fewer did (or
 * they landed through processes it does not hear). One run at a time.
 */
export class CheckpointSchedule {
  private readonly writer: CheckpointWriter;
  private heard = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly onRecord = (meta: RecordMeta) => {
    if (isCheckpoint(meta)) this.heard = 0;
    else if (++this.heard >= this.cadence.every) this.run();
  };

  constructor(
    private readonly store: RelayStore,
    private readonly cadence: CheckpointCadence,
    signer: CheckpointSigner,
    private readonly log: Logger,
  ) {
    this.writer = new CheckpointWriter(store, signer, log);
  }

  /**
   * Counts from now, and first looks `seconds` from now, not at start: a hub
   * restarted on a corpus with uncovered records would otherwise append a
   * record before anyone asked it anything (and give the next append another id).
   */
  start(): this {
    this.store.on('record', this.onRecord);
    this.timer = setInterval(() => this.run(), this.cadence.seconds * 1000);
    this.timer.unref();
    return this;
  }

  /** Writes what is due; a call while a run is under way makes it run once more after. */
  run(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.heard = 0;
    this.running = this.writer
      .writeDue()
      .then(
        (ids) => ids.length > 0 && this.log.info(`wrote checkpoint${ids.length === 1 ? '' : 's'} ${ids.join(' ')}`),
        (err: unknown) => this.closed || this.log.warn(`no checkpoint written: ${(err as Error).message}`),
      )
      .then(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.run();
        }
      });
  }

  /** Stops the timer and waits for a run under way (before the store closes). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.store.off('record', this.onRecord);
    await this.running;
  }
}
