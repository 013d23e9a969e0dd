/**
 * Abouts from the records (lib/model/about.ts): at a store's open, each
 * agent's latest fit about the roster does not hold yet is read from its
 * record, so a restarted server, a clone or a mirror without .state/ knows
 * them all. Only the kind: about records are looked at, newest first, and a
 * file is read only where the roster lacks that record's about: a restart on
 * an unchanged corpus reads no record at all.
 *
 * A record counts for the agent its channel names (depositingAgent): the
 * signed mcp/NAME or http/NAME, or the agent: a named stdio server or an
 * operator's CLI wrote. One from a channel that names no one is no one's
 * about; one whose line a later rule refuses is passed over for the one
 * before it. How a server's --about or an operator states one is
 * lib/store/state-about.ts, above the wings.
 *
 * While the store is open, an about that lands by a way no process here
 * stated it (rsync, git pull, a copy) is noted as it is heard (`aboutHeard`),
 * not at the next open.
 */
import type { Logger } from '../../log.js';
import { ABOUT_KIND, aboutOf } from '../../model/about.js';
import { BROADCAST, depositingAgent } from '../../model/agent-name.js';
import type { RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordIndex, RecordMeta } from '../../model/record-index.js';
import type { RecordBytes } from '../follow/subscription.js';
import type { Roster } from './roster.js';

export interface AboutParts {
  index: RecordIndex;
  shape: IdShape;
  /** The read wing's, handed over by wings.ts (a wing does not import a later one). */
  reads: { read(id: string): Promise<RecordBytes> };
  roster: Pick<Roster, 'aboutOf' | 'stated'>;
  log: Logger;
}

const ABOUTS: RecordFilter = { kind: new Set([ABOUT_KIND]) };

/** Whose about record `n` is: the agent its channel names, or null for no one's. */
function aboutAgent(meta: Pick<RecordMeta, 'depositedBy' | 'agent'>): string | null {
  const agent = depositingAgent(meta.depositedBy, meta.agent);
  return agent === BROADCAST ? null : agent;
}

/**
 * Notes record `n`'s about for its agent unless the roster holds this one or
 * a later one; `bytes` reads the record only when it must. Answers whether
 * the agent is settled: noted now, held already, or (false) a record whose
 * line a later rule refuses.
 */
async function noteAbout(n: number, agent: string, bytes: () => Promise<Buffer>, { shape, roster, log }: Pick<AboutParts, 'shape' | 'roster' | 'log'>): Promise<'held' | 'noted' | 'unfit'> {
  const held = await roster.aboutOf(agent);
  if (held !== null && held.id >= n) return 'held';
  let about: string;
  try {
    about = aboutOf(await bytes());
  } catch (err) {
    log.debug(`${shape.format(n)} is not ${agent}'s about: ${(err as Error).message}`);
    return 'unfit';
  }
  await roster.stated(agent, about, n);
  return 'noted';
}

/** Notes in the roster every agent's latest about it lacks; answers how many it noted. */
export async function rebuildAbouts(parts: AboutParts): Promise<number> {
  const { index, shape, reads } = parts;
  const ids = index.matchingAfter(0, ABOUTS);
  const settled = new Set<string>();
  let noted = 0;
  for (let i = ids.length - 1; i >= 0; i--) {
    const n = ids[i]!;
    const meta = index.get(n)?.meta;
    const agent = meta ? aboutAgent(meta) : null;
    if (agent === null || settled.has(agent)) continue;
    const got = await noteAbout(n, agent, async () => (await reads.read(shape.format(n))).record, parts);
    if (got === 'unfit') continue;
    settled.add(agent);
    if (got === 'noted') noted++;
  }
  return noted;
}

/** A record heard landing, with its bytes: noted in the roster if it is an about no process here stated yet. */
export function aboutHeard(n: number, meta: RecordMeta, record: Buffer, parts: Pick<AboutParts, 'shape' | 'roster' | 'log'>): void {
  if (meta.kind !== ABOUT_KIND) return;
  const agent = aboutAgent(meta);
  if (agent === null) return;
  noteAbout(n, agent, async () => record, parts).catch((err: Error) => parts.log.warn(`cannot note ${agent}'s about in the roster: ${err.message}`));
}
