/**
 * How a named agent learns who else is on the relay without a tool of its
 * own: its inbox wait's answer carries `agents` (names, and who is waiting
 * now) the first time this server answers it and whenever a name joins
 * after, and nothing otherwise. So the roster costs bytes only when it is
 * news (a restarted server tells it once more: the model may have lost it),
 * where a seventh tool would cost every session's listing and a field in
 * every answer every call. Who is waiting changes by the second and is not
 * news alone; it rides along when the names change. An agent's about (what
 * it says it does and knows) is news when it is stated anew, at most once a
 * minute per name. After the first answer only what changed is sent. In the text an
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

/** How often one agent's restated about is news to a peer: a name restating it every call must not ride along on every answer. */
export const ABOUT_NEWS_EVERY_MS = 60_000;

/**
 * What each (store, agent) pair was last told, in this process: each other
 * name's about as told (null: none) and when it was news (never, for none), the roster's cheap look
 * then, the names it listed whose files could not be read, and when an about
 * held back (ABOUT_NEWS_EVERY_MS) is due.
 */
interface Told {
  abouts: Map<string, { about: string | null; at: number }>;
  whole: string;
  unread: readonly string[];
  dueAt: number;
}
const told = new WeakMap<RelayStore, Map<string, Told>>();

/** Roster news: everyone (`whole`) the first time, then only the names that joined or restated their about. */
export interface RosterNews {
  agents: AgentHere[];
  whole: boolean;
}

/**
 * The roster for `agent` (itself left out) if it is news since this process
 * last told it, else undefined: the whole roster the first time (and when a
 * name left), then only who joined or restated an about, a restated about at
 * most once per ABOUT_NEWS_EVERY_MS per name. Asked on every inbox wait's
 * answer, so it first compares the roster's names and abouts alone (a
 * listing and a stat) and reads every name's file only when they moved: at
 * 200 names the whole read cost ~37 ms of CPU a wait.
 */
export async function rosterNews(store: RelayStore, agent: string, now = Date.now()): Promise<RosterNews | undefined> {
  const byAgent = told.get(store) ?? new Map<string, Told>();
  told.set(store, byAgent);
  const { roster } = store.agents;
  const look = await roster.namesAndAbouts();
  const last = byAgent.get(agent);
  // A name listed but not read last time (caught mid-write) is news once it reads: looked at alone, not the whole roster.
  if (last?.whole === look.text && now < last.dueAt && !(last.unread.length > 0 && (await roster.anyReadable(last.unread)))) return undefined;
  const everyone = await store.roster();
  const others = everyone.filter((entry) => entry.name !== agent).sort((a, b) => (a.name < b.name ? -1 : 1));
  const read = new Set(everyone.map((entry) => entry.name));
  const abouts = new Map<string, { about: string | null; at: number }>();
  const changed: typeof others = [];
  let dueAt = Infinity;
  for (const entry of others) {
    const before = last?.abouts.get(entry.name);
    const about = entry.about ?? null;
    if (before === undefined) {
      changed.push(entry);
      abouts.set(entry.name, { about, at: about === null ? -Infinity : now });
    } else if (before.about === about) {
      abouts.set(entry.name, before);
    } else if (now - before.at >= ABOUT_NEWS_EVERY_MS) { // a first about (told with none before) is news at once
      changed.push(entry);
      abouts.set(entry.name, { about, at: now });
    } else {
      abouts.set(entry.name, before); // held back: told once its turn comes
      dueAt = Math.min(dueAt, before.at + ABOUT_NEWS_EVERY_MS);
    }
  }
  const left = last !== undefined && [...last.abouts.keys()].some((name) => !abouts.has(name));
  byAgent.set(agent, { abouts, whole: look.text, unread: look.names.filter((name) => !read.has(name)), dueAt });
  const shown = ({ name, waiting, about }: (typeof others)[number]): AgentHere => (about === undefined ? { name, waiting } : { name, waiting, about });
  if (last === undefined || left) return { agents: others.map(shown), whole: true };
  return changed.length === 0 ? undefined : { agents: changed.map(shown), whole: false };
}

/** How the line of news of some names only begins (a bridge session that has not had the whole roster yet looks for it). */
export const NEWS_OF_SOME = 'agents joined or restated (the others as before):';

/**
 * The line a wait's text adds for it:  agents here: ana (waiting) "reviews the store's append path", bob
 * or, for news of some names only:     agents joined or restated (the others as before): bob "…"
 */
export function rosterLine(agents: AgentHere[], whole = true): string {
  const one = (a: AgentHere) => `${a.name}${a.waiting ? ' (waiting)' : ''}${a.about === undefined ? '' : ` ${quotedAbout(a.about)}`}`;
  if (!whole) return `${NEWS_OF_SOME} ${agents.map(one).join(', ')}`;
  return `agents here: ${agents.length ? agents.map(one).join(', ') : 'none but you'}`;
}
