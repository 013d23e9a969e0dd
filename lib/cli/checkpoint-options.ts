/** The checkpoint options `serve` and `checkpoint` share (lib/store/checkpoint-writer.ts). */
import { DEFAULT_HUB_KEY } from '../auth/hub-key.js';
import { DEFAULT_CADENCE, type CheckpointCadence } from '../store/checkpoint-writer.js';
import { UsageError, numberOption, stringOption, type CommandContext, type OptionSpec } from './command.js';

export const CHECKPOINT_KEY_OPTION: OptionSpec = { 'checkpoint-key': { type: 'string' } };
export const CHECKPOINT_OPTIONS: OptionSpec = { ...CHECKPOINT_KEY_OPTION, 'checkpoint-every': { type: 'string' }, 'checkpoint-seconds': { type: 'string' } };

export const CHECKPOINT_KEY_HELP = `  --checkpoint-key NAME   sign checkpoints with keys/NAME.key, when it is there
                          (default ${DEFAULT_HUB_KEY}: \`p-e-relay keys add ${DEFAULT_HUB_KEY}\` makes it); without it they are unsigned`;

export const CHECKPOINT_HELP = `  --checkpoint-every N    with --http: append a checkpoint record after every N records
                          (default ${DEFAULT_CADENCE.every}; 0 turns them off), so that \`p-e-relay verify\`
                          on any copy proves it complete (docs/mirroring.md); a stdio
                          swarm with no hub runs \`p-e-relay checkpoint\` instead
  --checkpoint-seconds T  with --http: and look every T seconds for records no
                          checkpoint covers (default ${DEFAULT_CADENCE.seconds}; the first look is
                          T seconds after the start)
  --checkpoint-key NAME   with --http: sign checkpoints with keys/NAME.key, when it is
                          there (default ${DEFAULT_HUB_KEY}); without it they are unsigned`;

export function checkpointKeyOption(ctx: CommandContext): string {
  return stringOption(ctx, 'checkpoint-key') ?? DEFAULT_HUB_KEY;
}

/** The cadence `serve --http` writes checkpoints at, or null for none (a read-only hub, or --checkpoint-every 0). */
export function checkpointCadence(ctx: CommandContext): CheckpointCadence | null {
  const every = numberOption(ctx, 'checkpoint-every') ?? DEFAULT_CADENCE.every;
  const seconds = numberOption(ctx, 'checkpoint-seconds') ?? DEFAULT_CADENCE.seconds;
  if (seconds === 0) throw new UsageError('--checkpoint-seconds must be at least 1; --checkpoint-every 0 turns checkpoints off.');
  if (ctx.values['read-only'] === true || ctx.values.forward === true) { // a replica (--forward) is a read-only mirror too
    if (numberOption(ctx, 'checkpoint-every')) throw new UsageError('--checkpoint-every applies to a server that appends; a --read-only one holds the primary\'s checkpoints.');
    return null;
  }
  return every === 0 ? null : { every, seconds };
}
