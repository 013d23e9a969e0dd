/** `serve`: the MCP server over stdio (the default), or the HTTP hub with --http. */
import { DEFAULT_MAX_RECORD_BYTES } from '../record.js';
import type { StoreOptions } from '../store.js';
import { UsageError, numberOption, stringOption, type Command, type CommandContext } from './command.js';

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the MCP server (stdio by default)',
  help: `Usage: p-e-relay serve [--stdio] [options]

Runs the MCP server over stdio: an MCP client spawns it and talks on its
stdin/stdout; logs go to stderr. Every agent's client may spawn its own; they
all share one corpus.

  --stdio                 serve MCP over stdio (the default)
  --read-only             answer reads and waits; refuse appends (a mirror)
  --primary URL           with --read-only: where appends should go instead
  --poll MS               find new records by listing the corpus every MS
                          milliseconds instead of kernel events (NFS and other
                          filesystems without inotify)
  --max-record-bytes N    the largest record accepted (default ${DEFAULT_MAX_RECORD_BYTES})

Environment: P_E_RELAY_LOG=debug|info|warn|error|silent sets the log level.`,
  options: {
    stdio: { type: 'boolean' },
    'read-only': { type: 'boolean' },
    primary: { type: 'string' },
    poll: { type: 'string' },
    'max-record-bytes': { type: 'string' },
  },
  async run(ctx) {
    const { serveStdio } = await import('../mcp/stdio.js');
    await serveStdio({ ...storeOptions(ctx), log: ctx.log });
    return 0;
  },
};

export function storeOptions(ctx: CommandContext): StoreOptions {
  const poll = numberOption(ctx, 'poll');
  if (poll !== undefined && poll < 10) throw new UsageError('--poll takes milliseconds, at least 10.');
  return {
    corpus: ctx.corpus,
    readOnly: ctx.values['read-only'] === true,
    primary: stringOption(ctx, 'primary'),
    watch: poll === undefined ? 'events' : 'poll',
    reconcileMs: poll,
    maxRecordBytes: numberOption(ctx, 'max-record-bytes'),
    log: ctx.log,
  };
}
