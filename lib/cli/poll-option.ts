/** `--poll MS`, shared by every command that waits for new records (serve, wait, tail -f, inbox). */
import { UsageError, numberOption, type CommandContext } from './command.js';

/** The help line every waiting command shows for --poll. */
export const POLL_HELP = `  --poll MS       hear new records by listing the corpus every MS ms (at
                  least 10) instead of by kernel events: a corpus other hosts
                  write to (NFS, sshfs) where their records must be heard fast;
                  250 wakes within ~300 ms (docs/scaling.md)`;

/** `--poll MS` of a waiting command (serve, wait, tail -f, inbox), or undefined when not given. */
export function pollOption(ctx: CommandContext): number | undefined {
  const poll = numberOption(ctx, 'poll');
  if (poll !== undefined && poll < 10) throw new UsageError('--poll takes milliseconds, at least 10.');
  return poll;
}
