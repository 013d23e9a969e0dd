/**
 * An append that carries an idempotency key (SPEC §8b): the first call with
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
import { RelayError } from '../errors.js';
import { splitRecordFile, type Deposit } from '../model/deposit.js';
import { idempotencyConflict, type IdempotencyKeys } from '../model/idempotency-keys.js';
import { parseRecord } from '../model/record.js';
import type { IdShape } from '../model/ids.js';
import type { IdempotencyClaims } from './idempotency-claims.js';
import type { CorpusPaths } from './paths.js';
import { readRecordFile } from './record-file.js';

export interface OnceResult {
  id: string;
  digest: string;
  depositedBy: string;
  provenance: Deposit['provenance'];
  depositedAt: string;
  replayed?: true;
}

export interface OnceDeps {
  keys: IdempotencyKeys;
  claims: IdempotencyClaims;
  shape: IdShape;
  paths: CorpusPaths;
  /** Brings the index (and so the key map) up to date with the disk. */
  refresh(): Promise<void>;
}

export class AppendOnce {
  private readonly inFlight = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: OnceDeps) {}

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
    for (;;) {
      const known = keys.lookup(scope);
      if (known !== undefined) return this.answer(this.deps.shape.format(known), key, digest, proposed);
      const got = await claims.acquire(scope);
      if (got.done) return this.answer(got.id, key, digest, proposed);
      const { claim } = got;
      let stored: T;
      try {
        // A dead writer may have published before it died; a live one finished
        // before we got the claim, and our watcher may not have told us yet.
        if (got.tookOver) await this.deps.refresh();
        const found = keys.lookup(scope);
        if (found !== undefined) {
          const id = this.deps.shape.format(found);
          await claim.finish(id);
          return this.answer(id, key, digest, proposed);
        }
        if (!(await claim.stillOurs())) {
          await claim.abandon();
          continue;
        }
        stored = await store();
      } catch (err) {
        await claim.abandon();
        throw err;
      }
      await claim.finish(stored.id);
      return stored;
    }
  }

  /** The earlier record's own facts, read back from its file; or the conflict. */
  private async answer(id: string, key: string, digest: string, proposed: number | null): Promise<OnceResult> {
    let deposit: Deposit;
    let record: Buffer;
    try {
      ({ deposit, record } = splitRecordFile(await readRecordFile(this.deps.paths.record(id))));
    } catch (err) {
      const why = err instanceof RelayError ? String(err.details.why ?? err.message) : (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'its file is gone' : (err as Error).message;
      throw new RelayError('damaged', `This idempotency key already stored ${id}, but ${id} cannot be read back (${why}), so nothing was stored again. Ask the operator to run \`p-e-relay verify\` and restore ${id} from a mirror or from git.`, { id, state: 'PRESENT' });
    }
    const sameId = proposed === null || this.deps.shape.format(proposed) === id;
    if (deposit.digest !== digest || !sameId) {
      const what = deposit.digest !== digest ? 'whose bytes differ from yours' : `under another id than the ${this.deps.shape.format(proposed!)} you propose`;
      throw idempotencyConflict(key, { id, digest: deposit.digest, depositedBy: deposit.depositedBy, ...this.claimsOf(record) }, what);
    }
    return { id, digest: deposit.digest, depositedBy: deposit.depositedBy, provenance: deposit.provenance, depositedAt: deposit.depositedAt, replayed: true };
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
