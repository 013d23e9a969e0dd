/**
 * The idempotency key a named server gives a record sent without one, so no
 * key counter is left in the model's hands (spec §8d): `sha256/<hex of the
 * bytes>`, in the agent's own key scope (the store scopes a named channel's
 * keys by its agent). A retry after a lost answer then replays the first
 * record instead of storing a second; the same bytes sent twice are one
 * record, so an agent that truly means two sets a key of its own.
 *
 * An answer (kind: answer with a parent: id) gets none here: the store keys
 * it by its question (`<agent>/answer/<parent id>`, lib/model/answer-key.ts),
 * so a restarted agent that answers again in other words stores nothing.
 */
import type { IdShape } from '../../model/ids.js';
import { isAnswer } from '../../model/answer-key.js';

export function namedKey(text: string, given: string | undefined, shape: IdShape): string | undefined {
  if (given !== undefined || isAnswer(Buffer.from(text, 'utf8'), shape)) return given;
  return bytesKey(text);
}

/** The key of a record's bytes: the bridge and a replica key what they forward the same way, so one record lands once through any door. */
export function bytesKey(text: string): string {
  return `sha256/${process.getBuiltinModule('node:crypto').createHash('sha256').update(text).digest('hex')}`;
}
