/** `checkpoint`: append the checkpoints due now, as a serving hub does on its cadence. */
import { hubKeySigner } from '../auth/hub-key.js';
import { CheckpointWriter } from '../store/checkpoint-writer.js';
import { EXIT_OK, writeLine, type Command } from './command.js';
import { CHECKPOINT_KEY_HELP, CHECKPOINT_KEY_OPTION, checkpointKeyOption } from './checkpoint-options.js';
import { openForCommand } from './store-commands.js';

export const checkpointCommand: Command = {
  help: `Usage: p-e-relay checkpoint [--checkpoint-key NAME]

Appends a checkpoint record over every record no checkpoint covers yet (more
than one when there are more than one lists), and prints each one's id;
prints nothing when nothing but checkpoints landed since the last. A hub
(serve --http) does this by itself every 1000 records or 300 s; a swarm of
stdio servers with no hub can run this from cron instead. Two writers never
store the same checkpoint twice (docs/mirroring.md).

${CHECKPOINT_KEY_HELP}`,
  options: CHECKPOINT_KEY_OPTION,
  async run(ctx) {
    const store = await openForCommand(ctx);
    try {
      const writer = new CheckpointWriter(store, hubKeySigner(ctx.keys, checkpointKeyOption(ctx), ctx.log), ctx.log);
      for (const id of await writer.writeDue()) writeLine(ctx.stdout, id);
      return EXIT_OK;
    } finally {
      await store.close();
    }
  },
};
