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
 */
import type { Logger } from '../../log.js';
import { ABOUT_KIND, aboutOf } from '../../model/about.js';
import { BROADCAST, depositingAgent } from '../../model/agent-name.js';
import type { RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordIndex } from '../../model/record-index.js';
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

/** Notes in the roster every agent's latest about it lacks; answers how many it noted. */
export async function rebuildAbouts({ index, shape, reads, roster, log }: AboutParts): Promise<number> {
  const ids = index.matchingAfter(0, ABOUTS);
  const settled = new Set<string>();
  let noted = 0;
  for (let i = ids.length - 1; i >= 0; i--) {
    const n = ids[i]!;
    const meta = index.get(n)?.meta;
    if (!meta) continue;
    const agent = depositingAgent(meta.depositedBy, meta.agent);
    if (agent === null || agent === BROADCAST || settled.has(agent)) continue;
    const held = await roster.aboutOf(agent);
    if (held !== null && held.id >= n) {
      settled.add(agent);
      continue;
    }
    let about: string;
    try {
      about = aboutOf((await reads.read(shape.format(n))).record);
    } catch (err) {
      log.debug(`${shape.format(n)} is not ${agent}'s about: ${(err as Error).message}`);
      continue;
    }
    await roster.stated(agent, about, n);
    settled.add(agent);
    noted++;
  }
  return noted;
}
