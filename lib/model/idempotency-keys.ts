/**
 * Idempotency keys (spec §8b): which held record each (channel, key) named.
 *
 * A caller sends one fresh key per record it means to store; the store
 * writes it in the deposit header (`idempotency-key: KEY`), so the header
 * is the truth and this map is rebuilt from it by every scan and watcher
 * event, on every process and every clone. Its scope is the channel that
 * deposited the record (`deposited-by`) and the key: `mcp/scout-7` and
 * `http/scout-7` sending the same key are two different requests. Over HTTP
 * `deposited-by` names the signing agent, so no agent can claim first a key
 * another will send (the REST header itself is unsigned: spec §10 signs the
 * method, ts and body only).
 *
 * Kept apart from RecordIndex on purpose: only keyed records cost anything
 * here, and the index stays about ids and claims. Pure: no disk.
 */
import { RelayError } from '../errors.js';
import { claimText } from './claim-text.js';
import { answerKey } from './answer-key.js';
import type { IdShape } from './ids.js';
import type { RecordClaims } from './record.js';

export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** Refuses a key that is empty, longer than 200 characters, or not printable ASCII. */
export function checkIdempotencyKey(key: string): string {
  if (key.length >= 1 && key.length <= MAX_IDEMPOTENCY_KEY_LENGTH && PRINTABLE_ASCII.test(key)) return key;
  const why = key.length === 0 ? 'it is empty' : key.length > MAX_IDEMPOTENCY_KEY_LENGTH ? `it is ${key.length} characters long` : 'it holds a character that is not printable ASCII';
  throw new RelayError('bad_idempotency_key', `That idempotency key cannot be used: ${why}. Send 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII ` +
    `characters (one per record, e.g. <your name>/q/<n>), or leave it out. Nothing was stored.`, { why });
}

/** What the record a key already stored says of itself, for the conflict's sentence. */
export interface StoredUnderKey {
  id: string;
  digest: string;
  depositedBy: string;
  /** Its `kind:` and `from:` claims, and its `parent:` id (formatted), or null. */
  kind: string | null;
  from: string | null;
  parent: string | null;
}

/**
 * The idempotency_conflict refusal. The sentence is the one place that says
 * what a conflict means for the record the key guards, told by that record's
 * own kind: under an answer's key (`<you>/answer/<question id>`) the answer
 * already landed, so the answerer sends nothing; under a question's, the
 * question landed, so the asker waits for its answers instead of asking again;
 * its from: tells whether it is the asker's own (over stdio every agent shares
 * the channel `mcp`, so another agent's key can collide).
 */
export function idempotencyConflict(key: string, stored: StoredUnderKey, why: string): RelayError {
  const { id } = stored;
  const next =
    stored.kind === 'answer' ? `Your answer${stored.parent ? ` to ${stored.parent}` : ''} already landed as ${id}: do not send it again.`
    // Same bytes would have been replayed, so this is never a plain retry: the sender asked
    // the same question in other words, or the key was reused, by another agent or by itself.
    : stored.kind === 'question' ? `A question from ${stored.from === null ? '(no from:)' : claimText(stored.from, 'from')} already landed under this key as ${id}: if that was you asking ` +
      `this same question, do not ask again; its answers will name ${id} in parent:. Otherwise (another agent's, or another question of yours under a ` +
      `reused key) the key is taken: send yours under a new key.`
    : `Use a fresh key for a new record, or send ${id}'s exact bytes again to get its answer.`;
  return new RelayError('idempotency_conflict', `The idempotency key "${key}" was already used on this channel (${stored.depositedBy}) for ${id}, ` +
    `${why}; nothing was stored. ${next}`, { id, digest: stored.digest });
}

/**
 * The one string a (channel, key) pair is known by, here and on disk. A
 * named stdio server's keys are scoped by its agent as well (spec §8d):
 * every stdio server deposits as `mcp`, and without the name one agent could
 * claim another's `<name>/answer/<id>` first. An unnamed channel's scope is
 * what it always was, so keys held before names existed still answer.
 *
 * A REST deposit's (`http/<signer>`) is bound to the record's digest too
 * (boundToBytes): its key comes in the `Idempotency-Key` header, which the
 * signature does not cover, so a proxy that rewrote the header on one
 * request could otherwise spend a key the signer sends later with other
 * bytes (409). Bound, a key answers only the bytes it was sent with; over
 * /mcp and stdio the key is in the signed body, and conflicts are refused.
 * Bound is only what could have come in that header: not the record's own
 * answer key (`ownAnswer`, ownAnswerKey), which the hub derives.
 */
export function idempotencyScope(depositedBy: string, key: string, agent: string | undefined, digest: string, ownAnswer?: string): string {
  const scope = agent === undefined ? `${depositedBy}\n${key}` : `${depositedBy} agent=${agent}\n${key}`;
  return boundToBytes(depositedBy) && key !== ownAnswer ? `${scope}\n${digest}` : scope;
}

/**
 * The answer key the record's own claims give it on a channel whose keys are
 * bound (answer-key.ts), which idempotencyScope leaves unbound: the hub
 * derives it from the signed body, so no proxy wrote it, and one answer is
 * one record over REST as over /mcp, in the same words or others. A header
 * key equal to it is the key the hub would have derived: a proxy that wrote
 * it onto a request stored that answer under its own answer key, nothing
 * else. Undefined on other channels, and for a record that is no answer.
 */
export function ownAnswerKey(depositedBy: string, agent: string | undefined, claims: Pick<RecordClaims, 'kind' | 'parent'> | null, shape: IdShape): string | undefined {
  if (claims === null || !boundToBytes(depositedBy)) return undefined;
  return answerKey(agent ?? depositedBy.slice(depositedBy.indexOf('/') + 1), claims, shape);
}

/** Whether a channel's keys are bound to the record's bytes: REST's, whose key header is not signed. */
export function boundToBytes(depositedBy: string): boolean {
  return depositedBy.startsWith('http/');
}

export class IdempotencyKeys {
  private readonly byScope = new Map<string, number>();
  private readonly byId = new Map<number, string>();

  get size(): number {
    return this.byScope.size;
  }

  /**
   * Records that held record `n` was deposited under this scope. Two records
   * under one scope can only come from outside the store (clones merged by
   * hand): the lower id answers, the same on every process.
   */
  note(scope: string, n: number): void {
    const known = this.byScope.get(scope);
    if (known !== undefined && known <= n) return;
    this.byScope.set(scope, n);
    this.byId.set(n, scope);
  }

  /** Every record noted and its scope (for the index snapshot, which carries them to the next process). */
  entries(): [number, string][] {
    return [...this.byId];
  }

  lookup(scope: string): number | undefined {
    return this.byScope.get(scope);
  }

  /** Record `n` does not carry this scope's key after all (what said so was not its header): the pair no longer answers. */
  unnote(scope: string, n: number): void {
    if (this.byScope.get(scope) === n) this.byScope.delete(scope);
    if (this.byId.get(n) === scope) this.byId.delete(n);
  }

  /** Record `n` is gone from disk: its key no longer answers. */
  forget(n: number): void {
    const scope = this.byId.get(n);
    if (scope === undefined) return;
    this.byId.delete(n);
    if (this.byScope.get(scope) === n) this.byScope.delete(scope);
  }
}
