/** Operator commands: init, verify, tail, serve. */
import { DEFAULT_ID_WIDTH } from '../model/ids.js';
import { initStore } from '../ops/init.js';
import { appearedLine } from '../doors/render.js';
import { appeared } from '../store/store.js';
import { verifyCorpus } from '../ops/verify.js';
import { checkpointLines, stateLines, verifyFailed } from './verify-output.js';
import { ensureStore } from '../store/store-mark.js';
import type { RecordMeta } from '../model/record-index.js';
import { EXIT_OK, EXIT_REFUSED, UsageError, numberOption, writeLine, writeWhenReady, type Command } from './command.js';
import { POLL_HELP } from './poll-option.js';
import { checkpointKeyOption } from './checkpoint-options.js';
import { DEFAULT_HUB_KEY } from '../auth/hub-key.js';
import { openForCommand } from './store-commands.js';
import { FILTER_HELP, FILTER_OPTIONS, filterOption } from './filter-options.js';

export const initCommand: Command = {
  help: `Usage: p-e-relay init [--corpus DIR] [--keys DIR] [--id-width N]

Creates the corpus directory with .gitattributes ("* -text", so git keeps
bytes exact), .gitignore (".state/") and a settings file, and the keys
directory with a .gitignore for *.key. Safe to run again on an existing store.

  --id-width N   digits in an id, ${DEFAULT_ID_WIDTH} to 9 (default ${DEFAULT_ID_WIDTH}); fixed for the life of the store`,
  options: { 'id-width': { type: 'string' } },
  async run(ctx) {
    const width = numberOption(ctx, 'id-width');
    if (width !== undefined && (width < DEFAULT_ID_WIDTH || width > 9)) throw new UsageError(`--id-width takes ${DEFAULT_ID_WIDTH} to 9, not ${width}.`);
    const result = await initStore({ corpus: ctx.corpus, keys: ctx.keys, idWidth: width });
    writeLine(ctx.stdout, `store ready at ${result.corpus} (ids of ${result.idWidth} digits), keys in ${result.keys}`);
    for (const file of result.created) ctx.log.info(`created ${file}`);
    return EXIT_OK;
  },
};

/** At most one progress line a second, and always the last: a log, not a carriage-return spinner, so it reads the same in a file. */
function progressLines(stderr: NodeJS.WritableStream, everyMs = 1000): (done: number, total: number) => void {
  let last = Date.now();
  return (done, total) => {
    const now = Date.now();
    if (done < total && now - last < everyMs) return;
    last = now;
    stderr.write(`verified ${done}/${total} records (${total === 0 ? 100 : Math.floor((done * 100) / total)}%)\n`);
  };
}

export const verifyCommand: Command = {
  help: `Usage: p-e-relay verify [--clean] [--json] [--checkpoint-key NAME]

Reads every record and re-checks its digest. Prints one line per damaged
record and a summary. Then, from the checkpoints the hub wrote among the
records (docs/mirroring.md), whether this copy is complete: "complete and
identical up to relay-N", or one line per record missing or altered, per
fork (a history that differs from the hub's) and per checkpoint that cannot
be believed. Signatures are checked with one key only, the checkpoint key
(keys/hub.key, in --keys DIR), and the summary names it; a checkpoint
signed by another name is never checked, and once one was signed by the
checkpoint key, a later one unsigned or signed by another name is broken.
Where that key is at hand, or named with --checkpoint-key, only checkpoints
whose signature was checked with it prove the copy complete: past them it
is "consistent, not proven", and verify exits 1.
Then what .state/index and .state/issued say that the records
do not. Exits 1 if any record is damaged, missing or altered, on a fork or
a broken checkpoint, past the proven checkpoints, or if .state/index says what the records do not (a row
with no file, a key or a high-water mark no record bears out).
On stderr, a progress line about once a second (\`verified
250000/1000000 records (25%)\`) and one at the end. Temp files left by a
crash are reported as a warning (they never hold a published record).

  --clean    remove the stray temp files whose writer is no longer running.
             On a corpus shared by several hosts (NFS, sshfs) only this host's
             files are judged and removed; other hosts' are reported, and
             left for verify --clean on their own host.
  --json     print the whole report as one JSON object instead of lines
  --checkpoint-key NAME
             check checkpoint signatures with keys/NAME.key (default ${DEFAULT_HUB_KEY}):
             the name the hub signs with (serve --checkpoint-key)`,
  options: { clean: { type: 'boolean' }, json: { type: 'boolean' }, 'checkpoint-key': { type: 'string' } },
  async run(ctx) {
    await ensureStore(ctx.corpus, true); // verify --clean removes files: never in a directory that is no store
    const report = await verifyCorpus(ctx.corpus, {
      clean: ctx.values.clean === true,
      keysDir: ctx.keys,
      checkpointKey: checkpointKeyOption(ctx),
      checkpointKeyNamed: ctx.values['checkpoint-key'] !== undefined,
      onProgress: progressLines(ctx.stderr),
    });
    if (ctx.values.json === true) {
      writeLine(ctx.stdout, JSON.stringify(report));
      return verifyFailed(report) ? EXIT_REFUSED : EXIT_OK;
    }
    for (const d of report.damaged) writeLine(ctx.stdout, `damaged ${d.id}: ${d.why}`);
    for (const name of report.stray) ctx.log.warn(`stray temp file .state/tmp/${name}${report.removed.includes(name) ? ' (removed)' : ' (left by a crash; --clean removes it)'}`);
    for (const name of report.live) ctx.log.info(`temp file .state/tmp/${name} belongs to a running writer; left alone`);
    for (const f of report.foreign) ctx.log.warn(`temp file .state/tmp/${f.name} was made on host ${f.host}, ` +
      `which shares this corpus; left alone (run verify --clean there to remove it if its writer is gone)`);
    writeLine(ctx.stdout, `${report.checked} records checked, ${report.damaged.length} ` +
      `damaged, ${report.stray.length} stray temp files${report.removed.length ? ` (${report.removed.length} removed)` : ''}${report.foreign.length ? `, ${report.foreign.length} ` +
        `temp files of other hosts left alone` : ''}`);
    for (const line of checkpointLines(report)) writeLine(ctx.stdout, line);
    const state = stateLines(report);
    for (const line of state.out) writeLine(ctx.stdout, line);
    for (const line of state.info) ctx.log.info(line);
    return verifyFailed(report) ? EXIT_REFUSED : EXIT_OK;
  },
};

export const tailCommand: Command = {
  help: `Usage: p-e-relay tail [-n N] [-f] [--poll MS] [filters]

Prints a line of metadata per record (id, kind, from, to, parent, refs,
deposited-by, provenance) for the newest N matching records, then with -f
one line per matching record as it lands, until interrupted. For a host that
watches a command's output: \`p-e-relay tail -n 0 -f --to NAME\` prints one
line for each record addressed to NAME.

  -n, --lines N   how many of the newest matching records to print first (default 10)
  -f, --follow    keep printing new matching records as they land
${POLL_HELP}
${FILTER_HELP}`,
  options: { lines: { type: 'string', short: 'n' }, follow: { type: 'boolean', short: 'f' }, poll: { type: 'string' }, ...FILTER_OPTIONS },
  async run(ctx) {
    const lines = numberOption(ctx, 'lines') ?? 10;
    const follow = ctx.values.follow === true;
    if (!follow && ctx.values.poll !== undefined) throw new UsageError('--poll applies to tail -f (following new records); add -f.');
    const store = await openForCommand(ctx, follow);
    try {
      const filter = filterOption(ctx, store.shape);
      // The newest N are found from the end of the index, and then walked in
      // batches: nothing lists the whole store (at 200k it built every
      // record's metadata to print ten).
      const mark = store.markBeforeNewest(lines, filter);
      const print = (meta: RecordMeta) => writeWhenReady(ctx.stdout, appearedLine(appeared(meta)) + '\n');
      if (!follow) {
        for (const { meta } of store.eachHeldAfter(mark, filter)) await print(meta);
        return EXIT_OK;
      }
      // One subscription: the newest N as its catch-up, at the pace stdout
      // takes them, then each record as it lands, none lost in between.
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          clearInterval(keepAlive);
          subscription.close();
          resolve();
        };
        const subscription = store.subscribe({ after: mark, filter, onClosed: stop }, (meta, _n, phase) => {
          const pending = print(meta);
          if (phase === 'catch-up') return pending; // live records are never waited for
        });
        // The watcher does not hold the process open by itself (a server's transport does); here we must.
        const keepAlive = setInterval(() => {}, 1 << 30);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      return EXIT_OK;
    } finally {
      await store.close();
    }
  },
};
