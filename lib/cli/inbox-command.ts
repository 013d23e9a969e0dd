/**
 * `p-e-relay inbox --to NAME`: what is addressed to NAME since its mark, in
 * a form an agent's host can put in front of the model (SPEC §8a; the
 * shapes are in inbox-output.ts, the recipes in docs/agents.md).
 *
 * Peek and consume stay separate: the mark moves only after the output has
 * been written (a hook killed mid-way delivers again next time, never
 * loses), and `--peek` never moves it. The mark is the last id considered,
 * matching or not, so a record is delivered once; one delivery carries at
 * most MAX_ITEMS records and MAX_BYTES of their text, and the mark stops at
 * the last one it carried.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { AGENT_NAME } from '../auth/keys.js';
import { RelayError } from '../errors.js';
import { splitRecordFile } from '../model/deposit.js';
import { parseFilter } from '../model/filter.js';
import type { RelayStore } from '../store/store.js';
import { EXIT_OK, UsageError, readAll, stringOption, type Command } from './command.js';
import { FORMATS, isHookEvent, render, type Format, type Inbox, type InboxItem } from './inbox-output.js';
import { openForCommand } from './store-commands.js';

/** One delivery's bounds: what a model reads in one hook answer. */
const MAX_ITEMS = 20;
const MAX_BYTES = 64 * 1024;

export const inboxCommand: Command = {
  help: `Usage: p-e-relay inbox --to NAME [--to NAME…] [--mark FILE] [--peek] [--format F]

Prints the records addressed to NAME (their to: header names it; several
--to match any of them, e.g. --to scout-7 --to all) that landed after the
mark, then moves the mark past them. Run it from an agent host's hook, so a
busy agent hears what is addressed to it without spending a turn on a wait.

  --to NAME       a recipient, matched literally against each record's to:.
                  The first is you: it names the mark, and the text's answer
                  recipe (from: NAME, idempotency_key NAME/answer/<its id>)
  --mark FILE     where the mark is kept (default: corpus/.state/marks/NAME,
                  this machine's, never mirrored). No mark: from the start
  --peek          print, but never move the mark
  --format F      text (default) · json · hook (Claude Code or Codex command
                  hook: reads the event JSON on stdin, answers PostToolUse,
                  UserPromptSubmit and SessionStart with additionalContext and
                  Stop with decision: block) · codex-notify (Codex's notify
                  program: the event JSON is the last argument; one line per
                  record, for a desktop notifier)

Nothing new prints nothing in the hook and codex-notify forms, so the host
carries on. One run carries at most ${MAX_ITEMS} records and ${MAX_BYTES / 1024} KiB of their text;
the rest comes with the next. docs/agents.md has a recipe per host.`,
  options: { to: { type: 'string', multiple: true }, mark: { type: 'string' }, peek: { type: 'boolean' }, format: { type: 'string' } },
  allowPositionals: true,
  async run(ctx) {
    const names = (ctx.values.to as string[] | undefined) ?? [];
    if (names.length === 0 || names.some((name) => name === '')) throw new UsageError('inbox needs --to NAME: the recipient whose records to deliver (e.g. --to scout-7 --to all).');
    const format = (stringOption(ctx, 'format') ?? 'text') as Format;
    if (!FORMATS.includes(format)) throw new UsageError(`--format is one of ${FORMATS.join(', ')}.`);
    if (ctx.positionals.length > 0 && format !== 'codex-notify') throw new UsageError('inbox takes no arguments except, in --format codex-notify, the event Codex appends.');
    const markOption = stringOption(ctx, 'mark');
    if (markOption === undefined && !AGENT_NAME.test(names[0]!)) throw new UsageError(`"${names[0]}" cannot name a mark file; pass --mark FILE.`);

    let event: string | null = null;
    if (format === 'hook') {
      event = hookEvent(await readAll(ctx.stdin));
      if (!isHookEvent(event)) {
        ctx.log.warn(`inbox: the ${event} hook cannot show the model anything; hook it on PostToolUse, Stop, SubagentStop, UserPromptSubmit or SessionStart`);
        return EXIT_OK;
      }
    }
    if (format === 'codex-notify' && notifyType(ctx.positionals.at(-1)) !== 'agent-turn-complete') return EXIT_OK;

    const store = await openForCommand(ctx);
    try {
      const markFile = markOption ?? path.join(store.paths.marks, names[0]!);
      const after = await readMark(markFile, store);
      const inbox = await collect(store, names, after);
      const out = render(inbox, format, event);
      if (out !== '') await write(ctx.stdout, out);
      // Only now: a delivery that could not be written is delivered again.
      if (!ctx.values.peek && inbox.mark !== store.shape.format(after)) await writeMark(markFile, inbox.mark);
      return EXIT_OK;
    } finally {
      await store.close();
    }
  },
};

function hookEvent(input: Buffer): string {
  let event: unknown;
  try {
    event = (JSON.parse(input.toString('utf8')) as { hook_event_name?: unknown }).hook_event_name;
  } catch {
    event = undefined;
  }
  if (typeof event !== 'string') throw new UsageError('--format hook reads the hook event as JSON on stdin (with hook_event_name), as Claude Code and Codex send it; none came.');
  return event;
}

function notifyType(arg: string | undefined): unknown {
  try {
    return (JSON.parse(arg ?? '') as { type?: unknown }).type;
  } catch {
    throw new UsageError('--format codex-notify takes the JSON Codex appends as its last argument; none came.');
  }
}

/** Where the last delivery stopped; 0 (the start) when there is no mark yet. */
async function readMark(file: string, store: RelayStore): Promise<number> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  try {
    return store.parseAfter(text.trim());
  } catch (err) {
    throw new RelayError('bad_id', `The mark file ${file} holds "${text.trim()}", which is no id of this store. Delete it to deliver from the start, or write the last id delivered into it.`, { mark: (err as RelayError).details });
  }
}

/** Temp name, then rename: a reader never sees half a mark. */
async function writeMark(file: string, mark: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temp, mark + '\n');
  await fs.rename(temp, file);
}

async function collect(store: RelayStore, names: string[], after: number): Promise<Inbox> {
  const items: InboxItem[] = [];
  let mark = after;
  let bytes = 0;
  let more = false;
  // SPEC §8a's `to` match, answered by the store's index (a to: naming several recipients included).
  const filter = parseFilter({ to: names }, store.shape);
  for (const { n, meta } of store.eachHeldAfter(after)) {
    if (store.matches(n, filter)) {
      if (items.length === MAX_ITEMS) {
        more = true;
        break;
      }
      const text = await recordText(store, meta.id);
      const fits = text !== null && bytes + Buffer.byteLength(text) <= MAX_BYTES;
      if (fits) bytes += Buffer.byteLength(text);
      items.push({ id: meta.id, kind: meta.kind, from: meta.from, to: meta.to, text: fits ? text : null });
    }
    mark = n;
  }
  return { to: names, items, mark: store.shape.format(mark), more };
}

async function recordText(store: RelayStore, id: string): Promise<string | null> {
  try {
    return splitRecordFile(await store.read(id)).record.toString('utf8');
  } catch {
    return null; // damaged or gone since the scan: named, not shown
  }
}

function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => stream.write(text, (err) => (err ? reject(err) : resolve())));
}
