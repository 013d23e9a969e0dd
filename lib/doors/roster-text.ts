/**
 * The roster as text (`p-e-relay agents`): one line per name, the same facts
 * `GET /agents` gives as JSON. Pure.
 */
import { quotedAbout } from '../model/about.js';
import type { RosterEntry } from '../store/store.js';

/**
 *   agents (2):
 *   bob      waiting  last seen 2026-12-01T20:59:00.000Z  served
 *   scout-7  -        last seen 2026-12-01T20:41:13.120Z  signed, key  "reads the store's append path"
 *
 * An about is another agent's words: quoted, printable (what does not print is an escape) and capped.
 */
export function rosterText(entries: readonly RosterEntry[]): string {
  const width = Math.max(0, ...entries.map((e) => e.name.length));
  const about = (e: RosterEntry) => (e.about === undefined ? '' : `  ${quotedAbout(e.about)}`);
  const lines = entries.map((e) => `${e.name.padEnd(width)}  ${e.waiting ? 'waiting' : '-      '}  last seen ${e.lastSeen}  ${e.how.join(', ')}${about(e)}`.trimEnd());
  return [`agents (${entries.length}):`, ...lines].join('\n');
}
