/**
 * The idempotency key an answer sent without one is stored under (spec
 * §8d): `<agent>/answer/<question id>`, so an answer repeated after a
 * restart or a lost reply, in the same words or others, lands once.
 *
 * Derived here only, from the parsed parent: id (what the store reads of the
 * record: the first id of the store's shape in parent:, the kind in any
 * case), never from the header's raw text: `parent: relay-0007 (the pass)`
 * answers relay-0007, and its key is `ana/answer/relay-0007` on every door.
 * The hub's store (named-append.ts) and a replica (lib/replica/) call it;
 * the bridge adds no key to an answer and leaves it to the hub's store.
 */
import type { IdShape } from './ids.js';
import { parseRecord, type RecordClaims } from './record.js';

/** The key, or undefined when the record is not an answer to a record of this shape. */
export function answerKey(agent: string, claims: Pick<RecordClaims, 'kind' | 'parent'>, shape: IdShape): string | undefined {
  if (claims.parent === null || claims.kind?.toLowerCase() !== 'answer') return undefined;
  return `${agent}/answer/${shape.format(claims.parent)}`;
}

/** The same from a record's bytes; undefined too for bytes the store would refuse (it says why when they are sent). */
export function answerKeyOf(agent: string, bytes: Uint8Array, shape: IdShape): string | undefined {
  try {
    return answerKey(agent, parseRecord(bytes, shape, Infinity), shape);
  } catch {
    return undefined;
  }
}

/** Whether the store of this shape will key these bytes as an answer when they come unkeyed from a named agent. */
export function isAnswer(bytes: Uint8Array, shape: IdShape): boolean {
  return answerKeyOf('-', bytes, shape) !== undefined;
}
