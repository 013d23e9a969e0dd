/** `mirror SRC`: fill this corpus from a primary with rsync, and say what arrived. */
import { isRelayError } from '../errors.js';
import { mirrorCorpus } from '../ops/mirror.js';
import { EXIT_OK, UsageError, numberOption, stringOption, writeLine, type Command, type CommandContext } from './command.js';

/** At most this often a progress line on stderr; a big first sync brings thousands of records. */
const PROGRESS_EVERY_MS = 250;

export const mirrorCommand: Command = {
  help: `Usage: p-e-relay mirror [--corpus DIR] [--rsh CMD] [--every MS] SRC

Copies the records this corpus lacks from the primary's corpus at SRC, a local
directory or host:path over ssh, using rsync:

  rsync -a --ignore-existing --no-links --exclude=/.state/ --exclude=/.git/ \\
        --exclude=/.relay-* SRC/ DIR/

A record already here is never overwritten, bytes are copied exactly, and the
primary's .state/ is never copied. The corpus (created if needed) is marked as
a mirror of SRC in its .state/, so servers and the CLI refuse appends on it:
send records to the primary, and they arrive here with the next run. Run it
again as often as you like (a cron job, a systemd timer, a loop); it fetches
only what is new. A server on the mirror (\`serve --read-only\`) sees each
record as it lands.

Prints "arrived (N): id id …" on stdout; progress and rsync's messages go to
stderr. Needs rsync on this machine (and on the source host for host:path).

  --rsh CMD    the remote shell rsync uses, e.g. "ssh -p 2222 -i ~/.ssh/mirror"
               (default: rsync's, i.e. ssh or $RSYNC_RSH)
  --every MS   keep mirroring: run again every MS milliseconds (start to
               start, at least 100) until interrupted, printing an arrived
               line only when something arrived. One process for the whole
               schedule, so a 1 s schedule is not spent starting Node; a
               failed run is logged and the next one tried (docs/scaling.md)`,
  options: { rsh: { type: 'string' }, every: { type: 'string' } },
  allowPositionals: true,
  async run(ctx) {
    if (ctx.positionals.length !== 1) throw new UsageError('mirror takes one SRC: the primary\'s corpus directory, or host:path, e.g. `p-e-relay mirror hub.example:/srv/p-e-relay/corpus`.');
    const source = ctx.positionals[0]!;
    const every = numberOption(ctx, 'every');
    if (every !== undefined) {
      if (every < 100) throw new UsageError('--every takes milliseconds, at least 100.');
      return mirrorEvery(ctx, source, every);
    }
    // Progress only for runs long enough to need it; a routine sync that brings
    // a record or two stays quiet on stderr.
    let count = 0;
    let shown = false;
    let lastProgress = Date.now();
    const progress = (id: string) => {
      count++;
      const now = Date.now();
      if (now - lastProgress < PROGRESS_EVERY_MS) return;
      lastProgress = now;
      shown = true;
      ctx.stderr.write(`received ${count} records (latest ${id})\r`);
    };
    // The progress line is rewritten in place; leave it showing the final count.
    const endProgress = () => {
      if (shown) ctx.stderr.write(`received ${count} records${' '.repeat(24)}\n`);
    };
    try {
      const result = await mirrorCorpus({ source, corpus: ctx.corpus, rsh: stringOption(ctx, 'rsh'), env: ctx.env, stderr: ctx.stderr, log: ctx.log, onArrived: progress });
      endProgress();
      writeLine(ctx.stdout, arrivedLine(result.arrived));
      for (const name of result.otherFiles) ctx.log.info(`also arrived: ${name}`);
      ctx.log.info(`${result.corpus} mirrors ${result.source} and holds ${result.held} records`);
      return EXIT_OK;
    } catch (err) {
      endProgress();
      // What arrived before a failure is whole and stays: report it all the same.
      const arrived = isRelayError(err) ? err.details.arrived : undefined;
      if (Array.isArray(arrived)) writeLine(ctx.stdout, arrivedLine(arrived as string[]));
      throw err;
    }
  },
};

/** One line, like list_relays': `arrived (N): id id …`, nothing after the colon when empty. */
export function arrivedLine(ids: string[]): string {
  const sorted = [...ids].sort();
  return `arrived (${sorted.length}):${sorted.length ? ' ' + sorted.join(' ') : ''}`;
}

/**
 * `mirror --every MS`: one run per period, start to start, until SIGINT or
 * SIGTERM. A run that fails (the primary unreachable for a moment) is logged
 * once per failure and the schedule goes on; records that arrived stay.
 */
async function mirrorEvery(ctx: CommandContext, source: string, everyMs: number): Promise<number> {
  let stopping = false;
  let wake: (() => void) | null = null;
  const stop = () => {
    stopping = true;
    wake?.();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    while (!stopping) {
      const began = Date.now();
      try {
        const result = await mirrorCorpus({ source, corpus: ctx.corpus, rsh: stringOption(ctx, 'rsh'), env: ctx.env, stderr: ctx.stderr, log: ctx.log });
        if (result.arrived.length > 0) writeLine(ctx.stdout, arrivedLine(result.arrived));
      } catch (err) {
        ctx.log.warn(`mirroring ${source} failed (${(err as Error).message}); trying again in ${everyMs} ms`);
      }
      const pause = Math.max(0, everyMs - (Date.now() - began));
      if (!stopping && pause > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pause);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return EXIT_OK;
}
