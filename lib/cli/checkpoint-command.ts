/** `checkpoint`: append the checkpoints due now, as a serving hub does on its cadence. */
import { hubKeySigner } from '../auth/hub-key.js';
import { CheckpointWriter } from '../store/checkpoint-writer.js';
import { isRelayError } from '../errors.js';
import { EXIT_OK, EXIT_REFUSED, writeLine, type Command } from './command.js';
import { CHECKPOINT_KEY_HELP, CHECKPOINT_KEY_OPTION, checkpointKeyOption } from './checkpoint-options.js';
import { openForCommand } from './store-commands.js';

export const checkpointCommand: Command = {
  help: `Usage: p-e-relay checkpoint [--checkpoint-key NAME]

Appends a checkpoint record over every record no checkpoint covers yet (more
than one when there are more than one lists), and prints each one's id;
prints nothing (and says so on stderr) when nothing but checkpoints landed
since the last. Exits 1, saying why, when the checkpoint due cannot be
written (its place is taken by a record no checkpoint can follow). A hub
(serve --http) does this by itself every 1000 records or 300 s; a swarm of
stdio servers with no hub can run this from cron instead. Two writers never
store the same checkpoint twice (docs/mirroring.md).

${CHECKPOINT_KEY_HELP}`,
  options: CHECKPOINT_KEY_OPTION,
  async run(ctx) {
    const store = await openForCommand(ctx);
    try {
      const writer = new CheckpointWriter(store, hubKeySigner(ctx.keys, checkpointKeyOption(ctx), ctx.log), ctx.log);
      let ids: string[];
      try {
        ids = await writer.writeDue();
      } catch (err) {
        if (isRelayError(err)) throw err;
        ctx.log.warn(`no checkpoint written: ${(err as Error).message}`);
        return EXIT_REFUSED;
      }
      for (const id of ids) writeLine(ctx.stdout, id);
      if (ids.length === 0) {
        const newest = (await writer.latest()).link.id;
        ctx.log.info(newest === 0 ? 'nothing to checkpoint: no record is held' : `nothing to checkpoint: every record is covered by checkpoint ${store.shape.format(newest)}`);
      }
      return EXIT_OK;
    } finally {
      await store.close();
    }
  },
};
