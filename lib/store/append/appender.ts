/**
 * One append, from the bytes a door received to a record durable on disk,
 * indexed and announced: checked (its claims, a named channel's from:, its
 * recipients against the roster), taken once per idempotency key
 * (keyed-append.ts), published (lib/disk/publish.ts) under the next free id
 * or a proposed one (id-allocator.ts), rung, noted in the issued log.
 */
import { asRelayError, type RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { unknownRecipient } from '../../model/agent-name.js';
import { buildRecordFile, digestOf, type Deposit } from '../../model/deposit.js';
import { checkIdempotencyKey, idempotencyScope } from '../../model/idempotency-keys.js';
import type { IdShape } from '../../model/ids.js';
import { parseRecord, type RecordClaims } from '../../model/record.js';
import type { RecordIndex } from '../../model/record-index.js';
import type { CorpusPaths } from '../../disk/paths.js';
import { lostMountRefusal, type TempLeftovers } from '../../disk/lost-mount.js';
import { publish, type DirectorySync, type PublishInto } from '../../disk/publish.js';
import type { AgentDeliveries } from '../agents/deliveries.js';
import { namedAppend, statedAbout, statedAgentOf, type StatedAbout } from '../agents/named-append.js';
import type { Roster } from '../agents/roster.js';
import type { CorpusFacts } from '../corpus-facts.js';
import type { Visibility } from '../follow/visibility.js';
import { bellsOf } from '../hear/bell-keys.js';
import type { Bells } from '../hear/bells.js';
import { ONLY_BELOW, type Peers } from '../hear/peers.js';
import type { CorpusIndexer } from '../index/corpus-indexer.js';
import type { AppendOptions, AppendResult } from '../store-options.js';
import type { IdAllocator } from './id-allocator.js';
import type { IssuedLog } from './issued-log.js';
import type { KeyedAppends } from './keyed-append.js';

export interface AppenderParts {
  shape: IdShape;
  maxRecordBytes: number;
  paths: CorpusPaths;
  index: RecordIndex;
  indexer: Pick<CorpusIndexer, 'add' | 'ingest'>;
  ids: IdAllocator;
  keyed: KeyedAppends;
  issued: Pick<IssuedLog, 'note'>;
  /** Null on a read-only store (which never gets this far). */
  bells: Bells | null;
  dirSync: DirectorySync;
  leftovers: TempLeftovers;
  peers: Pick<Peers, 'hear'>;
  visibility: Pick<Visibility, 'announce' | 'release'>;
  agents: Pick<AgentDeliveries, 'unknownRecipients'>;
  /** Where a stored about is noted (the roster's about for its agent). */
  roster: Pick<Roster, 'stated'>;
  facts: CorpusFacts;
  /** Refuse a named append to a name not on the roster (serve --strict-recipients). */
  strictRecipients: boolean;
  log: Logger;
}

export interface CheckedAppend {
  bytes: Uint8Array;
  claims: RecordClaims;
  options: AppendOptions;
  /** The agent the deposit header states (a named stdio channel's). */
  statedAgent: string | undefined;
  key: string | undefined;
  /** A kind: about record's agent and line, checked. */
  about: StatedAbout | undefined;
}

export class Appender {
  private readonly into: PublishInto;

  constructor(private readonly parts: AppenderParts) {
    const { paths, dirSync, leftovers, log } = parts;
    this.into = { tmpDir: paths.tmp, remake: [paths.state, paths.tmp], dirSync, log, stranded: (file, err, creating) => leftovers.note(file, err, creating) };
  }

  /**
   * What the bytes claim, checked, with the options a named channel makes of
   * them and the idempotency key's shape: refused before the store is opened.
   */
  check(bytes: Uint8Array, options: AppendOptions): CheckedAppend {
    const claims = parseRecord(bytes, this.parts.shape, this.parts.maxRecordBytes);
    const named = namedAppend(claims, options, this.parts.shape);
    const key = named.options.idempotencyKey === undefined ? undefined : checkIdempotencyKey(named.options.idempotencyKey);
    const about = statedAbout(claims, bytes, named.options);
    return { bytes, claims, options: named.options, statedAgent: named.statedAgent, key, about };
  }

  /** The from: of the held record `parent` names, which a reply may name as a recipient without being told it is unknown. */
  private authorOf(parent: number | null): string | null {
    return parent === null ? null : (this.parts.index.get(parent)?.meta?.from ?? null);
  }

  /** Stores a checked record once (once per key, where one is sent). Call only on an open store. */
  async append(checked: CheckedAppend): Promise<AppendResult> {
    const { bytes, claims, options, key } = checked;
    const { agents } = this.parts;
    const unknown = options.agent === undefined ? [] : await agents.unknownRecipients(claims.to, this.authorOf(claims.parent));
    if (unknown.length > 0 && this.parts.strictRecipients) throw unknownRecipient(unknown);
    const digest = digestOf(bytes);
    const proposed = options.id === undefined ? null : this.parts.ids.parseProposal(options.id);
    const store = () => this.appendNew(bytes, claims, digest, proposed, options);
    let result: AppendResult;
    try {
      result = key === undefined ? await store() : await this.parts.keyed.run(idempotencyScope(options.depositedBy, key, checked.statedAgent, digest), key, digest, proposed, store);
    } catch (err) {
      throw this.refusal(err); // the key's claim meets a lost mount too
    }
    if (checked.about) await this.parts.roster.stated(checked.about.agent, checked.about.about, this.parts.shape.parseRecordId(result.id)!);
    return unknown.length > 0 ? { ...result, unknownRecipients: unknown } : result;
  }

  private async appendNew(bytes: Uint8Array, claims: RecordClaims, digest: string, proposed: number | null, options: AppendOptions): Promise<AppendResult> {
    const { ids, indexer, visibility, shape } = this.parts;
    if (proposed !== null) await ids.checkProposal(proposed, digest);
    const deposit = depositFor(options, digest);
    let linked: number | null = null;
    try {
      const n = await publish(buildRecordFile(deposit, bytes), this.into, async (temp) => {
        linked = proposed === null ? await ids.linkNextFree(temp) : await ids.linkProposed(temp, proposed, digest);
        // The record is visible from here on. Note it in the log with what it
        // claims, then ring, both before this process makes it durable, so that
        // waiters read it meanwhile, and the other processes learn from the line
        // whom it is for instead of opening it (model/issued-line.ts).
        this.parts.issued.note(linked, { claims, depositedBy: deposit.depositedBy, idempotencyKey: deposit.idempotencyKey, agent: deposit.agent, digest });
        this.ring(claims);
        return linked;
      });
      // Every id below is indexed first (or known absent), so a cursor that covers this one misses none of them.
      this.parts.peers.hear(n - 1, ONLY_BELOW);
      const meta = indexer.add(n, deposit, claims);
      if (meta) visibility.announce(n, meta, { record: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), digest });
      const result: AppendResult = { id: shape.format(n), digest, depositedBy: deposit.depositedBy, provenance: deposit.provenance, depositedAt: deposit.depositedAt };
      if (this.parts.facts.entryNotDurable) result.durability = this.parts.facts.entryNotDurable;
      return result;
    } catch (err) {
      // Linked, then a later step failed: the record is on disk all the same; index it from there.
      if (linked !== null) await indexer.ingest(linked).catch(() => {});
      throw this.refusal(err);
    } finally {
      if (linked !== null) {
        ids.indexed(linked);
        visibility.release();
      }
    }
  }

  private ring(claims: RecordClaims): void {
    this.parts.bells?.ring(bellsOf(claims));
  }

  /** What an append's failure tells its caller: a lost mount by name (safe to retry under its key), else its code. */
  private refusal(err: unknown): RelayError {
    const { paths, facts } = this.parts;
    return lostMountRefusal(err, { corpus: paths.corpus, type: facts.type }, facts.shared) ?? asRelayError(err);
  }
}

/** The deposit header an append writes above the record. */
function depositFor(options: AppendOptions, digest: string): Deposit {
  const deposit: Deposit = { provenance: options.provenance ?? 'as-received', depositedBy: options.depositedBy, depositedAt: new Date().toISOString(), digest };
  if (options.idempotencyKey !== undefined) deposit.idempotencyKey = options.idempotencyKey;
  const statedAgent = statedAgentOf(options);
  if (statedAgent !== undefined) deposit.agent = statedAgent;
  return deposit;
}
