/**
 * How a named agent learns who else is on the relay without a tool of its
 * own: its inbox wait's answer carries `agents` (names, and who is waiting
 * now) the first time this server answers it and whenever a name joins
 * after, and nothing otherwise. So the roster costs bytes only when it is
 * news (a restarted server tells it once more: the model may have lost it),
 * where a seventh tool would cost every session's listing and a field in
 * every answer every call. Who is waiting changes by the second and is not
 * news alone; it rides along when the names change. An agent's about (what
 * it says it does and knows) is news when it is stated anew. In the text an
 * about is quoted as JSON: it is another agent's words, shown outside any
 * record fence, so it is printable, capped and never bare.
 */
import { shownAbout } from '../../model/about.js';
import type { RelayStore } from '../../store/store.js';

export interface AgentHere {
  name: string;
  waiting: boolean;
  about?: string;
}

/** The names each (store, agent) pair was last told, in this process. */
const told = new WeakMap<RelayStore, Map<string, string>>();

/** The roster for `agent` (itself left out) if its names changed since this process last told it, else undefined. */
export async function rosterNews(store: RelayStore, agent: string): Promise<AgentHere[] | undefined> {
  const others = (await store.roster()).filter((entry) => entry.name !== agent).sort((a, b) => (a.name < b.name ? -1 : 1));
  const names = JSON.stringify(others.map((entry) => [entry.name, entry.about ?? null]));
  const byAgent = told.get(store) ?? new Map<string, string>();
  told.set(store, byAgent);
  if (byAgent.get(agent) === names) return undefined;
  byAgent.set(agent, names);
  return others.map(({ name, waiting, about }) => (about === undefined ? { name, waiting } : { name, waiting, about }));
}

/** The line a wait's text adds for it:  agents here: ana (waiting) "reviews the store's append path", bob */
export function rosterLine(agents: AgentHere[]): string {
  const one = (a: AgentHere) => `${a.name}${a.waiting ? ' (waiting)' : ''}${a.about === undefined ? '' : ` ${JSON.stringify(shownAbout(a.about))}`}`;
  return `agents here: ${agents.length ? agents.map(one).join(', ') : 'none but you'}`;
}
