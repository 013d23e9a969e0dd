/**
 * The CLI's reads and its append: each calls the same store function as the
 * matching MCP tool and prints the same text.
 */
import { RelayStore, WAIT_MAX_ITEMS } from '../store/store.js';
import { appendText, existsText, listText, repliesText, waitText } from '../doors/render.js';
import { EXIT_OK, EXIT_TIMED_OUT, UsageError, localUser, numberOption, readAll, stringOption, writeLine, type Command, type CommandContext } from './command.js';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import { behindAfterEmptyWait } from '../store/checkpoint-frontier.js';
import { filesystemFacts } from '../disk/filesystem.js';
import { retryingLostMount } from '../disk/lost-mount.js';
import { POLL_HELP, pollOption } from './poll-option.js';
import { FILTER_HELP, FILTER_OPTIONS, filterOption } from './filter-options.js';

/**
 * Opens the store for a command: a one-shot one has no watcher and no
 * reconcile timer; a waiting one (`watch`) hears new records by kernel
 * events, or by listing the corpus every `--poll` ms when given.
 */
export async function openForCommand(ctx: CommandContext, watch = false): Promise<RelayStore> {
  const poll = watch ? pollOption(ctx) : undefined;
  const store = await RelayStore.prepare({ corpus: ctx.corpus, watch: !watch ? 'none' : poll === undefined ? 'events' : 'poll', reconcileMs: poll, log: ctx.log, readOnly: false });
  await store.open();
  return store;
}

function oneId(ctx: CommandContext, command: string): string {
  if (ctx.positionals.length !== 1) throw new UsageError(`${command} takes one id, e.g. \`p-e-relay ${command} relay-0042\`.`);
  return ctx.positionals[0]!;
}

/** Runs `body` with the store open for a command, and closes it whatever happens. */
export async function withStore<T>(ctx: CommandContext, body: (store: RelayStore) => Promise<T>, watch = false): Promise<T> {
  const store = await openForCommand(ctx, watch);
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

export const appendCommand: Command = {
  help: `Usage: p-e-relay append [--id ID] [--authored] [--idempotency-key KEY] [FILE]

Deposits the record in FILE (or read from stdin) and prints its id once it is
durable. It is stored as deposited-by cli/<your user name> with provenance
as-received, or authored when you pass --authored to declare that you wrote
these bytes yourself.

  --id ID       store it under this id (a gap below the next free id, such as a
                lost record's, or the next free id itself)
  --authored    declare that you, the operator, wrote the bytes
  --idempotency-key KEY
                1-200 printable ASCII, fresh per record: run the same command
                again (a script's retry) and it prints the id stored the first
                time instead of storing a second record; other bytes with the
                same key are refused (idempotency_conflict)

On a network mount (sshfs, GlusterFS, NFS) whose connection drops during the
append (store_unreachable), it is sent again under the same key after 0.25,
1, 2 and 4 s, and refused only if the mount is still gone. There a key is made
(cli-<random>) when you give none, so that the retry cannot store it twice.`,
  options: { id: { type: 'string' }, authored: { type: 'boolean' }, 'idempotency-key': { type: 'string' } },
  allowPositionals: true,
  async run(ctx) {
    if (ctx.positionals.length > 1) throw new UsageError('append takes at most one FILE; pass the record on stdin otherwise.');
    const file = ctx.positionals[0];
    const bytes = file && file !== '-' ? await fs.readFile(file) : await readAll(ctx.stdin);
    const store = await RelayStore.prepare({ corpus: ctx.corpus, watch: 'none', log: ctx.log, readOnly: false });
    try {
      // Only where a mount can drop is a key made: a retry without one could store the record twice.
      const shared = (await filesystemFacts(ctx.corpus, ctx.env)).shared;
      const key = stringOption(ctx, 'idempotency-key') ?? (shared ? `cli-${randomUUID()}` : undefined);
      const provenance = ctx.values.authored ? ('authored' as const) : ('as-received' as const);
      const options = { id: stringOption(ctx, 'id'), depositedBy: `cli/${localUser(ctx.env)}`, provenance, idempotencyKey: key };
      const result = key === undefined ? await store.append(bytes, options) : await retryingLostMount(() => store.append(bytes, options), ctx.log);
      writeLine(ctx.stdout, result.id);
      ctx.log.info(appendText(result));
      return EXIT_OK;
    } finally {
      await store.close();
    }
  },
};

export const getCommand: Command = {
  help: `Usage: p-e-relay get ID

Prints the stored file byte for byte after re-checking its digest. A missing
or damaged record is refused with its state (KNOWN_MISSING, UNKNOWN, damaged).`,
  allowPositionals: true,
  run: (ctx) =>
    withStore(ctx, async (store) => {
      ctx.stdout.write(await store.read(oneId(ctx, 'get')));
      return EXIT_OK;
    }),
};

export const existsCommand: Command = {
  help: `Usage: p-e-relay exists ID

Prints one line, e.g. "relay-0033 KNOWN_MISSING". Exit 0 whatever the state;
a malformed id is UNKNOWN.`,
  allowPositionals: true,
  run: (ctx) =>
    withStore(ctx, async (store) => {
      const { id, state } = await store.exists(oneId(ctx, 'exists'));
      writeLine(ctx.stdout, existsText(id, state));
      return EXIT_OK;
    }),
};

export const lsCommand: Command = {
  help: `Usage: p-e-relay ls [--after ID] [filters]

Prints two lines, "present (N): …" and "known missing (M): …". With a
filter, only the held records that match are listed (known missing is empty:
a missing id has no headers to match).

  --after ID        only ids after this one (relay-0000 means from the start)
${FILTER_HELP}`,
  options: { after: { type: 'string' }, ...FILTER_OPTIONS },
  run: (ctx) =>
    withStore(ctx, async (store) => {
      writeLine(ctx.stdout, listText(await store.list(stringOption(ctx, 'after'), filterOption(ctx, store.shape))));
      return EXIT_OK;
    }),
};

export const repliesCommand: Command = {
  help: `Usage: p-e-relay replies ID

Prints "replies to ID (N):" and a line per reply, in id order.`,
  allowPositionals: true,
  run: (ctx) =>
    withStore(ctx, async (store) => {
      writeLine(ctx.stdout, repliesText(await store.replies(oneId(ctx, 'replies'))));
      return EXIT_OK;
    }),
};

export const waitCommand: Command = {
  help: `Usage: p-e-relay wait [--after ID] [--timeout MS] [--poll MS] [filters] [--include-bytes]

With --after, returns at once if a newer matching record is held, else
blocks. Without it, waits for the next matching record to land. The last
line is "cursor: ID": pass it as --after next time to miss nothing and see
nothing twice. One answer carries at most ${WAIT_MAX_ITEMS.toLocaleString('en-US')} records, as wait_for_relay's
(the lowest ids; the cursor is the last of them, and stderr says how to go
on); to follow everything from a mark, use \`tail -f\`. Exit 0 when something
appeared, 3 when the time ran out with nothing new (1 is a refusal, such as an
--after ahead of the store; 2 bad usage).

  --after ID        the newest id you have seen (or the last cursor)
  --timeout MS      how long to wait (default 30000, at most 90000)
  --include-bytes   print each record's bytes too (up to 64 KiB in all)
${POLL_HELP}
${FILTER_HELP}`,
  options: { after: { type: 'string' }, timeout: { type: 'string' }, poll: { type: 'string' }, 'include-bytes': { type: 'boolean' }, ...FILTER_OPTIONS },
  run: (ctx) =>
    withStore(
      ctx,
      async (store) => {
        const filter = filterOption(ctx, store.shape);
        const timeoutMs = numberOption(ctx, 'timeout');
        const result = await store.wait({ after: stringOption(ctx, 'after'), timeoutMs, filter, includeBytes: ctx.values['include-bytes'] === true });
        const behind = await behindAfterEmptyWait(store, result.appeared);
        writeLine(ctx.stdout, waitText(result, { behind, lookOnly: timeoutMs === 0 }));
        if (result.appeared.length >= WAIT_MAX_ITEMS) writeLine(ctx.stderr,
          `p-e-relay wait: ${WAIT_MAX_ITEMS.toLocaleString('en-US')} records, the most one answer carries; ` +
          `more may be held above the cursor: run it again with --after ${result.cursor} (and the same filters)`);
        return result.appeared.length > 0 ? EXIT_OK : EXIT_TIMED_OUT;
      },
      true,
    ),
};
