/** `p-e-relay agents`: the roster (spec §8d), for operators; the same store function GET /agents calls. */
import { rosterText } from '../doors/roster-text.js';
import { RelayStore } from '../store/store.js';
import { EXIT_OK, UsageError, writeLine, type Command } from './command.js';

export const agentsCommand: Command = {
  help: `Usage: p-e-relay agents [--json]

Prints the roster of this corpus: every agent name that has served (a stdio
server started with --agent), signed a call to a hub on this corpus, or been
given a key (keys add, or a hub's keys at its start); when each was last
seen (its last call here); and whether it is waiting now (a wait of its own
is open in some server on this machine). An append whose to: names someone
not on the roster says so (unknownRecipients), and a server started with
--strict-recipients refuses it.

  --json   the same as JSON: {"agents": [{name, lastSeen, waiting, how}]},
           as GET /agents answers it`,
  options: { json: { type: 'boolean' } },
  async run(ctx) {
    if (ctx.positionals.length > 0) throw new UsageError('agents takes no arguments.');
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
