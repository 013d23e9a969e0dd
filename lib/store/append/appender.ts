/**
 * One append, from the bytes a door received to the answer: checked (its
 * claims, a named channel's from:, its recipients against the roster),
 * taken once per idempotency key (keyed-append.ts), stored as a new record
 * (new-record.ts: encoded, published, indexed, announced), and an about's
 * line given to the roster.
 */
import { unknownRecipient } from '../../model/agent-name.js';
import { digestOf } from '../../model/deposit.js';
import { checkIdempotencyKey, idempotencyScope, ownAnswerKey } from '../../model/idempotency-keys.js';
import type { IdShape } from '../../model/ids.js';
import { parseRecord, type RecordClaims } from '../../model/record.js';
import type { RecordIndex } from '../../model/record-index.js';
import type { AgentDeliveries } from '../agents/deliveries.js';
import { namedAppend, statedAbout, type StatedAbout } from '../agents/named-append.js';
import type { Roster } from '../agents/roster.js';
import type { Peers } from '../hear/peers.js';
import type { AppendOptions, AppendResult } from '../store-options.js';
import type { IdAllocator } from './id-allocator.js';
import type { KeyedAppends } from './keyed-append.js';
import type { NewRecords } from './new-record.js';
import { workClaimAppend, type WorkClaimAppend, type WorkClaimBook } from './work-claims.js';

export interface AppenderParts {
  shape: IdShape;
  maxRecordBytes: number;
  index: RecordIndex;
  /** Hears what peers added: only for a reply whose parent is not held here yet (the link hears the rest). */
  peers: Pick<Peers, 'hear'>;
  ids: Pick<IdAllocator, 'parseProposal'>;
  keyed: KeyedAppends;
  records: NewRecords;
  /** Claims, releases and dones decided under one lock (spec §8e). */
  workClaims: Pick<WorkClaimBook, 'decide' | 'checkReplayed'>;
  agents: Pick<AgentDeliveries, 'unknownRecipients'>;
  /** Where a stored about is noted (the roster's about for its agent). */
  roster: Pick<Roster, 'stated'>;
  /** Refuse a named append to a name not on the roster (serve --strict-recipients). */
  strictRecipients: boolean;
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
  /** A claim, release or done: what it claims or ends, checked (work-claims.ts). */
  workClaim: WorkClaimAppend | undefined;
}

export class Appender {
  constructor(private readonly parts: AppenderParts) {}

  /**
   * What the bytes claim, checked, with the options a named channel makes of
   * them and the idempotency key's shape: refused before the store is opened.
   */
  check(bytes: Uint8Array, options: AppendOptions): CheckedAppend {
    const claims = parseRecord(bytes, this.parts.shape, this.parts.maxRecordBytes);
    const named = namedAppend(claims, options, this.parts.shape);
    const key = named.options.idempotencyKey === undefined ? undefined : checkIdempotencyKey(named.options.idempotencyKey);
    const about = statedAbout(claims, bytes, named.options);
    const workClaim = workClaimAppend(claims, bytes, named.options);
    return { bytes, claims, options: named.options, statedAgent: named.statedAgent, key, about, workClaim };
  }

  /**
   * The from: of the record `parent` names, which a reply may name as a
   * recipient without being told it is unknown. A parent a peer stored a
   * moment ago may not be heard yet: what the issued log names is heard
   * first (never up to the parent's id itself, which the sender chose).
   */
  private authorOf(parent: number | null): string | null {
    if (parent === null) return null;
    const { index, peers } = this.parts;
    if (!index.has(parent)) peers.hear();
    return index.get(parent)?.meta?.from ?? null;
  }

  /** Stores a checked record once (once per key, where one is sent). Call only on an open store. */
  async append(checked: CheckedAppend): Promise<AppendResult> {
    const { bytes, claims, options, key } = checked;
    const { agents, records } = this.parts;
    const unknown = options.agent === undefined ? [] : await agents.unknownRecipients(claims.to, this.authorOf(claims.parent));
    if (unknown.length > 0 && this.parts.strictRecipients) throw unknownRecipient(unknown);
    const digest = digestOf(bytes);
    const proposed = options.id === undefined ? null : this.parts.ids.parseProposal(options.id);
    const publish = records.store.bind(records, { bytes, claims, digest, proposed, options, statedAgent: checked.statedAgent });
    // A claim is decided inside the key's hold, so a retried claim answers its first record instead of deciding again.
    const { workClaim } = checked;
    const store = workClaim === undefined ? publish : () => this.parts.workClaims.decide(workClaim, publish);
    let result: AppendResult;
    try {
      result = key === undefined ? await store() : await this.parts.keyed.run(idempotencyScope(options.depositedBy, key, checked.statedAgent, digest, ownAnswerKey(options.depositedBy, checked.statedAgent, claims, this.parts.shape)), key, digest, proposed, store);
    } catch (err) {
      throw records.refusal(err); // the key's claim meets a lost mount too
    }
    if (workClaim?.role === 'claim' && result.replayed) await this.parts.workClaims.checkReplayed(result.id);
    if (checked.about) await this.parts.roster.stated(checked.about.agent, checked.about.about, this.parts.shape.parseRecordId(result.id)!);
    return unknown.length > 0 ? { ...result, unknownRecipients: unknown } : result;
  }
}
