/**
 * An append that carries an idempotency key (spec §8b): the first call with
 * a (channel, key) stores the record; every later one answers that record
 * (`replayed: true`) when its bytes are the same, and is refused
 * `idempotency_conflict` when they differ.
 *
 * Three layers, cheapest first:
 *   1. the key map, rebuilt from every held record's deposit header (this
 *      process's scan and watcher: restarts and clones);
 *   2. one call per scope at a time inside this process;
 *   3. a claim under .state/idempotency/ (idempotency-claims.ts) across
 *      processes and hosts, taken before the record is linked.
 */
import { RelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { splitRecordFile, type Deposit } from '../../model/deposit.js';
import { boundToBytes, idempotencyConflict, idempotencyScope, ownAnswerKey, type IdempotencyKeys } from '../../model/idempotency-keys.js';
import { parseRecord } from '../../model/record.js';
import type { IdShape } from '../../model/ids.js';
import type { IdempotencyClaims } from './idempotency-claims.js';
import type { CorpusPaths } from '../../disk/paths.js';
import { readRecordFile } from '../../disk/record-file.js';

export interface OnceResult {
  id: string;
  digest: string;
  depositedBy: string;
  provenance: Deposit['provenance'];
  depositedAt: string;
  replayed?: true;
}

export interface KeyedAppendParts {
  keys: IdempotencyKeys;
  log: Logger;
  claims: IdempotencyClaims;
  shape: IdShape;
  paths: CorpusPaths;
  /** Indexes every record file on disk the index does not hold (and so feeds the key map). */
  readUnheld(): Promise<void>;
  /** The highest id this corpus has issued, as far as every process has told (the issued log, heard now). */
  issuedUpTo(): number;
  /** Drops a held record whose file is really gone; whether it was. */
  dropIfGone(n: number): Promise<boolean>;
}

/** What `answer` says when the key's record is gone and the caller re-deposits it under its own id. */
const RESTORE = Symbol('restore');

export class KeyedAppends {
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /**
   * Scopes whose last try was refused store_unreachable: its link() may have
   * landed on the file server with the answer lost, so the next try reads
   * the corpus before it decides, or it could store the record twice.
   */
  private readonly uncertain = new Set<string>();

  constructor(private readonly deps: KeyedAppendParts) {}

  /**
   * Runs `store` at most once for `scope` across every process on the corpus;
   * otherwise answers the record stored under it. `proposed` is the id the
   * caller asked for, if any: a repeat must ask for the same one.
   */
  run<T extends OnceResult>(scope: string, key: string, digest: string, proposed: number | null, store: () => Promise<T>): Promise<T | OnceResult> {
    const before = this.inFlight.get(scope) ?? Promise.resolve();
    const mine = before.catch(() => {}).then(() => this.once(scope, key, digest, proposed, store));
    this.inFlight.set(scope, mine);
    void mine.catch(() => {}).finally(() => {
      if (this.inFlight.get(scope) === mine) this.inFlight.delete(scope);
    });
    return mine;
  }

  private async once<T extends OnceResult>(scope: string, key: string, digest: string, proposed: number | null, store: () => Promise<T>): Promise<T | OnceResult> {
    const { keys, claims } = this.deps;
    // A done mark found false (its record does not carry this key): passed over while the claim is taken, and
    // replaced when the claim finishes. Until then every process reads it, finds it false and waits for the claim.
    let falseMark: string | null = null;
    for (;;) {
      const known = keys.lookup(scope);
      if (known !== undefined) {
        if (await this.holdsKey(known, scope)) return this.answerOrRestore(this.deps.shape.format(known), key, digest, proposed, store);
        keys.unnote(scope, known);
        continue;
      }
      const got = await claims.acquire(scope, falseMark);
      if (got.done) {
        if (await this.doneMarkHolds(got.id, scope)) return this.answerOrRestore(got.id, key, digest, proposed, store);
        falseMark = got.id;
        // The key may still have a true record this process has not heard of: the claim reads the corpus before it stores.
        this.uncertain.add(scope);
        continue;
      }
      const { claim } = got;
      let stored: T;
      try {
        // A dead writer may have published before it died; a live one finished
        // before we got the claim, and our watcher may not have told us yet.
        let readSince = got.tookOver || this.uncertain.has(scope);
        if (readSince) {
          await this.deps.readUnheld();
          this.uncertain.delete(scope);
        }
        let found = keys.lookup(scope);
        if (found !== undefined && !(await this.holdsKey(found, scope))) {
          keys.unnote(scope, found);
          found = undefined;
          readSince = true;
        }
        if (found !== undefined) {
          const id = this.deps.shape.format(found);
          await claim.finish(id, falseMark);
          return this.answerOrRestore(id, key, digest, proposed, store);
        }
        // Reading the disk may have taken long enough for another writer to judge us dead and take the key over:
        // look before publishing. Taken a moment ago with nothing read since, the claim is ours (a live claim dies
        // only after the claims' staleMs without a heartbeat), and the look would cost two stats on every keyed append.
        if (readSince && !(await claim.stillOurs())) {
          await claim.abandon();
          continue;
        }
        stored = await store();
      } catch (err) {
        if (err instanceof RelayError && err.code === 'store_unreachable') this.uncertain.add(scope);
        await claim.abandon();
        throw err;
      }
      await claim.finish(stored.id, falseMark);
      return stored;
    }
  }

  /**
   * Whether held record `n`'s own header carries this scope's key. The key
   * map is fed from headers, but also from the index snapshot, which is
   * `.state/` state anyone who can write there can write: a key it names for
   * a record that does not carry it would refuse the real sender's record,
   * naming one it never sent. A file that cannot be read says yes here, and
   * `answer` says what is wrong with it.
   */
  private async holdsKey(n: number, scope: string): Promise<boolean> {
    return (await this.keyIn(n, scope)) !== 'other';
  }

  /** What record `n`'s file says of this scope's key: carried, another (or none), the file gone, or not readable. */
  private async keyIn(n: number, scope: string): Promise<'carried' | 'other' | 'gone' | 'unreadable'> {
    let deposit: Deposit;
    let record: Buffer;
    try {
      ({ deposit, record } = splitRecordFile(await readRecordFile(this.deps.paths.record(this.deps.shape.format(n)))));
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'gone' : 'unreadable';
    }
    if (deposit.idempotencyKey === undefined) return 'other';
    const ownAnswer = ownAnswerKey(deposit.depositedBy, deposit.agent, boundToBytes(deposit.depositedBy) ? this.claimsOrNull(record) : null, this.deps.shape);
    const carried = idempotencyScope(deposit.depositedBy, deposit.idempotencyKey, deposit.agent, deposit.digest, ownAnswer) === scope;
    return carried ? 'carried' : 'other';
  }

  /**
   * Whether a done mark's id is a record that carries this scope's key. The
   * mark is `.state/` state like the snapshot (holdsKey): one naming another
   * record would refuse the real sender with a conflict over bytes it never
   * sent, so such a mark is passed over and the key taken afresh. A record
   * gone from disk keeps its mark (its sender is told how to put it back),
   * but only an id this corpus issued can have been one; a file that cannot
   * be read is believed, and `answer` says what is wrong with it.
   */
  private async doneMarkHolds(id: string, scope: string): Promise<boolean> {
    const n = this.deps.shape.parseRecordId(id);
    const found = n === null ? 'other' : await this.keyIn(n, scope);
    if (found === 'carried' || found === 'unreadable' || (found === 'gone' && n! <= this.deps.issuedUpTo())) return true;
    this.deps.log.warn(`an idempotency done mark names ${JSON.stringify(id.slice(0, 40))}, which does not carry its key; passed over, and the key taken afresh`);
    return false;
  }

  /**
   * The earlier record, as `answer` gives it; or, when its file is gone and
   * the caller proposes its id, the re-deposit of that lost record (spec §3),
   * stored under the same key. Two processes restoring at once both reach
   * link(): the one that loses is refused id_held with identical bytes,
   * and answers the record the other put back.
   */
  private async answerOrRestore<T extends OnceResult>(id: string, key: string, digest: string, proposed: number | null, store: () => Promise<T>): Promise<T | OnceResult> {
    const answered = await this.answer(id, key, digest, proposed);
    if (answered !== RESTORE) return answered;
    try {
      return await store();
    } catch (err) {
      if (!(err instanceof RelayError && err.code === 'id_held' && err.details.identical === true)) throw err;
      return (await this.answer(id, key, digest, proposed)) as OnceResult; // the file is back: not RESTORE again
    }
  }

  /** The earlier record's own facts, read back from its file; or the conflict; or RESTORE (answerOrRestore). */
  private async answer(id: string, key: string, digest: string, proposed: number | null): Promise<OnceResult | typeof RESTORE> {
    let deposit: Deposit;
    let record: Buffer;
    try {
      ({ deposit, record } = splitRecordFile(await readRecordFile(this.deps.paths.record(id))));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && (await this.deps.dropIfGone(this.deps.shape.parseRecordId(id)!))) {
        if (proposed !== null && this.deps.shape.format(proposed) === id) return RESTORE;
        throw new RelayError('not_found', `This idempotency key already stored ${id}, whose file is gone from this corpus, so nothing was stored. To ` +
          `put the record back, send this same call with id: ${id}; or ask the operator to restore ${id} from a mirror or from git.`, { id });
      }
      const why = err instanceof RelayError ? String(err.details.why ?? err.message) : (err as Error).message;
      throw new RelayError('damaged', `This idempotency key already stored ${id}, but ${id} cannot be read back (${why}), so nothing was stored ` +
        `again. Ask the operator to run \`p-e-relay verify\` and restore ${id} from a mirror or from git.`, { id, state: 'PRESENT' });
    }
    const sameId = proposed === null || this.deps.shape.format(proposed) === id;
    if (deposit.digest !== digest || !sameId) {
      const what = deposit.digest !== digest ? 'whose bytes differ from yours' : `under another id than the ${this.deps.shape.format(proposed!)} you propose`;
      throw idempotencyConflict(key, { id, digest: deposit.digest, depositedBy: deposit.depositedBy, ...this.claimsOf(record) }, what);
    }
    return { id, digest: deposit.digest, depositedBy: deposit.depositedBy, provenance: deposit.provenance, depositedAt: deposit.depositedAt, replayed: true };
  }

  private claimsOrNull(record: Buffer): ReturnType<typeof parseRecord> | null {
    try {
      return parseRecord(record, this.deps.shape, Infinity);
    } catch {
      return null;
    }
  }

  /** The stored record's kind and parent, which tell the conflict's sentence what the key guarded. */
  private claimsOf(record: Buffer): { kind: string | null; from: string | null; parent: string | null } {
    try {
      const claims = parseRecord(record, this.deps.shape, Infinity);
      return { kind: claims.kind, from: claims.from, parent: claims.parent === null ? null : this.deps.shape.format(claims.parent) };
    } catch {
      return { kind: null, from: null, parent: null }; // stored by hand, unparseable: the plain sentence
    }
  }
}
