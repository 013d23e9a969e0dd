/**
 * How a server's --about or an operator states an agent's about (the rules
 * of the line are lib/model/about.ts; reading them back at open is
 * agents/abouts.ts). It sits above the wings, beside the facade, because it
 * appends through the store as any door does.
 */
import { aboutRecord, checkAbout } from '../model/about.js';
import type { Provenance } from '../model/deposit.js';
import type { AppendOptions, AppendResult, RelayStore } from './store.js';

/** What states an about: the store (or a replica's forwarder) and the channel it comes through. */
export interface AboutStatement {
  store: Pick<RelayStore, 'open' | 'append' | 'agents' | 'shape'>;
  /** The channel's label (`mcp` for a named stdio server, `cli/<user>` for an operator). */
  depositedBy: string;
  provenance?: Provenance;
  /** Where the record goes, where not to the store itself (a replica's primary). */
  append?: (bytes: Uint8Array, options: AppendOptions) => Promise<AppendResult>;
}

/**
 * States `text` as `agent`'s about, unless the roster holds that very line
 * already: a server restarted with the same --about, or an operator's
 * command run twice, stores nothing. Answers the id of the record that
 * states it, and whether this call stored it.
 */
export async function stateAbout({ store, depositedBy, provenance, append }: AboutStatement, agent: string, text: string): Promise<{ id: string; stored: boolean }> {
  const about = checkAbout(text);
  await store.open(); // the roster's abouts are read back from the records at open
  const held = await store.agents.roster.aboutOf(agent);
  if (held !== null && held.about === about) return { id: store.shape.format(held.id), stored: false };
  const bytes = Buffer.from(aboutRecord(agent, about), 'utf8');
  const options = { depositedBy, agent, ...(provenance ? { provenance } : {}) };
  const result = append ? await append(bytes, options) : await store.append(bytes, options);
  return { id: result.id, stored: true };
}
