/**
 * The idempotency key a named server gives a record sent without one, so no
 * key counter is left in the model's hands (spec §8d): `sha256/<hex of the
 * bytes>`, in the agent's own key scope (the store scopes a named channel's
 * keys by its agent). A retry after a lost answer then replays the first
 * record instead of storing a second; the same bytes sent twice are one
 * record, so an agent that truly means two sets a key of its own.
 *
 * An answer (kind: answer with a parent:) gets none here: the store keys it
 * by its question (`answer/<parent id>`, lib/store/agents/named-append.ts),
 * so a restarted agent that answers again in other words stores nothing.
 */
import { FIRST_LINE } from '../../model/record.js';

export function namedKey(text: string, given: string | undefined): string | undefined {
  if (given !== undefined || answerParent(text) !== null) return given;
  return `sha256/${process.getBuiltinModule('node:crypto').createHash('sha256').update(text).digest('hex')}`;
}

/** The header lines, or [] for a record that does not begin with the first line (the store refuses it and says why). */
function headerLines(text: string): string[] {
  const lines = text.split(/\r?\n/);
  if (lines[0] !== FIRST_LINE) return [];
  const end = lines.indexOf('', 1);
  return lines.slice(1, end === -1 ? lines.length : end);
}

/**
 * The parent: of a record whose kind: is answer, else null; read as the store reads headers
 * (lib/model/record.ts: keys trimmed, in any case; the first of a repeated key wins). The bridge keys answers by it too.
 */
export function answerParent(text: string): string | null {
  const headers = headerLines(text);
  const value = (key: string) => {
    for (const line of headers) {
      const colon = line.indexOf(':');
      if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === key) return line.slice(colon + 1).trim();
    }
    return undefined;
  };
  const parent = value('parent');
  return parent && value('kind')?.toLowerCase() === 'answer' ? parent : null;
}
