/**
 * `p-e-relay agents`: the roster (spec §8d), for operators; the same store
 * function GET /agents calls. `agents about NAME TEXT` sets an agent's about
 * (lib/model/about.ts) as the operator: a kind: about record deposited
 * by cli/<user> with agent: NAME, as a named server of NAME would state it.
 */
import { rosterText } from '../doors/roster-text.js';
import { checkAgentName } from '../model/agent-name.js';
import { MAX_ABOUT_CHARS } from '../model/about.js';
import { stateAbout } from '../store/state-about.js';
import { RelayStore } from '../store/store.js';
import { EXIT_OK, localUser, UsageError, writeLine, type Command, type CommandContext } from './command.js';

export const agentsCommand: Command = {
  help: `Usage: p-e-relay agents [--json]
       p-e-relay agents about NAME TEXT

Prints the roster of this corpus: every agent name that has served (a stdio
server started with --agent), signed a call to a hub on this corpus, or been
given a key (keys add, or a hub's keys at its start); when each was last
seen (its last call here); whether it is waiting now (a wait of its own
is open in some server on this machine); and its about, the one line it
last stated about what it does and knows, quoted. An append whose to: names
someone not on the roster says so (unknownRecipients), and a server started
with --strict-recipients refuses it.

  --json   the same as JSON: {"agents": [{name, lastSeen, waiting, how, about?}]},
           as GET /agents answers it

about NAME TEXT sets NAME's about, as the operator: it stores a record
"kind: about" (deposited-by cli/<you>, agent: NAME, provenance authored)
whose body is TEXT, and prints its id. TEXT is one line of printable text,
at most ${MAX_ABOUT_CHARS} characters, without ">>>", "<<<" or a <channel> tag
(bad_about otherwise). The same TEXT as NAME's about now stores nothing and
prints the id that states it. An agent states its own by appending such a
record through its own channel, or with serve --agent NAME --about TEXT.`,
  options: { json: { type: 'boolean' } },
  allowPositionals: true,
  async run(ctx) {
    if (ctx.positionals[0] === 'about') return setAbout(ctx);
    if (ctx.positionals.length > 0) throw new UsageError(`agents takes no arguments but "about NAME TEXT"; got "${ctx.positionals[0]}".`);
    // The roster needs no index: the store is prepared (its corpus checked), never scanned.
    const store = await RelayStore.prepare({ corpus: ctx.corpus, watch: 'none', log: ctx.log });
    try {
      const agents = await store.roster();
      writeLine(ctx.stdout, ctx.values.json === true ? JSON.stringify({ agents }) : rosterText(agents));
      return EXIT_OK;
    } finally {
      await store.close();
    }
  },
};

async function setAbout(ctx: CommandContext): Promise<number> {
  if (ctx.positionals.length !== 3) throw new UsageError('agents about takes a NAME and one TEXT (quote it): p-e-relay agents about scout-7 "reads the append path".');
  if (ctx.values.json === true) throw new UsageError('--json is for the roster; agents about prints the id it stored.');
  const [, given, text] = ctx.positionals as [string, string, string];
  const agent = checkAgentName(given, 'agents about');
  const store = await RelayStore.prepare({ corpus: ctx.corpus, watch: 'none', log: ctx.log, readOnly: false });
  try {
    const { id, stored } = await stateAbout({ store, depositedBy: `cli/${localUser(ctx.env)}`, provenance: 'authored' }, agent, text);
    writeLine(ctx.stdout, id);
    ctx.log.info(stored ? `stored ${agent}'s about as ${id}` : `${agent}'s about is that line already (${id}); nothing stored`);
    if (!(await store.agents.roster.has(agent))) {
      ctx.log.warn(`${agent} is not on the roster yet: its about shows once it serves, signs or is given a key`);
    }
    return EXIT_OK;
  } finally {
    await store.close();
  }
}
