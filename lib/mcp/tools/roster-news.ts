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
import { quotedAbout } from '../../model/about.js';
import type { RelayStore } from '../../store/store.js';

export interface AgentHere {
  name: string;
  waiting: boolean;
  about?: string;
}

/** What each (store, agent) pair was last told, in this process: the others' names and abouts, the roster's cheap look then, and the names it listed whose files could not be read. */
interface Told {
  others: string;
  whole: string;
  unread: readonly string[];
}
const told = new WeakMap<RelayStore, Map<string, Told>>();

/**
 * The roster for `agent` (itself left out) if its names changed since this
 * process last told it, else undefined. Asked on every inbox wait's answer,
 * so it first compares the roster's names and abouts alone (a listing and a
 * stat) and reads every name's file only when they moved: at 200 names the
 * whole read cost ~37 ms of CPU a wait.
 */
export async function rosterNews(store: RelayStore, agent: string): Promise<AgentHere[] | undefined> {
  const byAgent = told.get(store) ?? new Map<string, Told>();
  told.set(store, byAgent);
  const { roster } = store.agents;
  const look = await roster.namesAndAbouts();
  const last = byAgent.get(agent);
  // A name listed but not read last time (caught mid-write) is news once it reads: looked at alone, not the whole roster.
  if (last?.whole === look.text && !(last.unread.length > 0 && (await roster.anyReadable(last.unread)))) return undefined;
  const everyone = await store.roster();
  const others = everyone.filter((entry) => entry.name !== agent).sort((a, b) => (a.name < b.name ? -1 : 1));
  const names = JSON.stringify(others.map((entry) => [entry.name, entry.about ?? null]));
  const read = new Set(everyone.map((entry) => entry.name));
  byAgent.set(agent, { others: names, whole: look.text, unread: look.names.filter((name) => !read.has(name)) });
  if (last?.others === names) return undefined;
  return others.map(({ name, waiting, about }) => (about === undefined ? { name, waiting } : { name, waiting, about }));
}

/** The line a wait's text adds for it:  agents here: ana (waiting) "reviews the store's append path", bob */
export function rosterLine(agents: AgentHere[]): string {
  const one = (a: AgentHere) => `${a.name}${a.waiting ? ' (waiting)' : ''}${a.about === undefined ? '' : ` ${quotedAbout(a.about)}`}`;
  return `agents here: ${agents.length ? agents.map(one).join(', ') : 'none but you'}`;
}
