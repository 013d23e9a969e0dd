/**
 * `p-e-relay inbox --to NAME`: what is addressed to NAME since its mark, in
 * a form an agent's host can put in front of the model (spec §8a; the
 * shapes are in inbox-output.ts, the recipes in docs/agents.md).
 *
 * Peek and consume stay separate: the mark moves only after the output has
 * been written (a hook killed mid-way delivers again next time, never
 * loses), and `--peek` never moves it. The mark is the last id considered,
 * matching or not, so a record is delivered once; one delivery carries at
 * most LIMITS (a hook, HOOK_LIMITS) of records and text, and the mark stops at
 * the last one it carried.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { AGENT_NAME } from '../auth/keys.js';
import { splitRecordFile } from '../model/deposit.js';
import { parseFilter } from '../model/filter.js';
import type { RecordMeta } from '../model/record-index.js';
import { formatMark, readMarkFile, undelivered, writeMarkFile, type Mark, type RelayStore } from '../store/store.js';
import { EXIT_OK, UsageError, readAll, stringOption, type Command, type CommandContext } from './command.js';
import { isHookEvent, isStopEvent, parseHookEvent, preview } from './inbox-hook.js';
import { FORMATS, itemHead, render, type Format, type Inbox, type InboxItem } from './inbox-output.js';
import { openForCommand } from './store-commands.js';
import { BROADCAST } from '../model/agent-name.js';

/** One delivery's bounds: what one run prints. */
interface Limits {
  maxItems: number;
  maxBytes: number;
}
const LIMITS: Limits = { maxItems: 20, maxBytes: 64 * 1024 };
/** A hook's answer goes into the model's context unasked, so it carries less; the rest comes with the next run. */
const HOOK_LIMITS: Limits = { maxItems: 10, maxBytes: 16 * 1024 };

export const inboxCommand: Command = {
  help: `Usage: p-e-relay inbox --to NAME [--to NAME…] [--mark FILE] [--peek] [--format F]

Prints the records addressed to NAME (their to: header names it; several
--to match any of them, e.g. --to scout-7 --to all) that landed after the
mark, then moves the mark past them. Run it from an agent host's hook, so a
busy agent hears what is addressed to it without spending a turn on a wait.

  --to NAME       a recipient, matched literally against each record's to:.
                  The first one other than all is you: it names the mark,
                  and the text's answer recipe (from: NAME, idempotency_key
                  NAME/answer/<its id>);
                  records from: you (or from: $P_E_RELAY_AGENT) are skipped
  --mark FILE     where the mark is kept (default: the agent's own mark for
                  this set of --to names, corpus/.state/marks/NAME/to=…,
                  shared with a named server's waits; this machine's, never
                  mirrored). A new default mark delivers what names NAME
                  from the start and broadcasts from NAME's first start
                  (its first inbox run or named server call); a new --mark
                  FILE delivers from the start
  --peek          print, but never move the mark
  --format F      text (default) · json · hook (Claude Code or Codex command
                  hook: reads the event JSON on stdin, answers PostToolUse,
                  UserPromptSubmit and SessionStart with additionalContext and
                  Stop with decision: block, except when the event says
                  stop_hook_active: then it lets the agent stop and keeps
                  the records for the next run) · codex-notify (Codex's notify
                  program: the event JSON is the last argument; one line per
                  record, for a desktop notifier)

Nothing new prints nothing in the hook and codex-notify forms, so the host
carries on; so does input the hook cannot read (a warning on stderr, exit
0). One run carries at most ${LIMITS.maxItems} records and ${LIMITS.maxBytes / 1024} KiB of their text and lines (the hook form
${HOOK_LIMITS.maxItems} and ${HOOK_LIMITS.maxBytes / 1024} KiB); the rest comes with the next. docs/agents.md has a
recipe per host.`,
  options: { to: { type: 'string', multiple: true }, mark: { type: 'string' }, peek: { type: 'boolean' }, format: { type: 'string' } },
  allowPositionals: true,
  async run(ctx) {
    const given = (ctx.values.to as string[] | undefined) ?? [];
    if (given.length === 0 || given.some((name) => name === '')) throw new UsageError('inbox needs --to NAME: the recipient whose records to deliver (e.g. --to scout-7 --to all).');
    // You are the first name that is not the broadcast name, wherever it stands: --to all --to scout-7 is scout-7's inbox too.
    const me = given.find((name) => name !== BROADCAST) ?? given[0]!;
    const names = [me, ...given.filter((name) => name !== me)];
    const format = (stringOption(ctx, 'format') ?? 'text') as Format;
    if (!FORMATS.includes(format)) throw new UsageError(`--format is one of ${FORMATS.join(', ')}.`);
    if (ctx.positionals.length > 0 && format !== 'codex-notify') throw new UsageError('inbox takes no arguments except, in --format codex-notify, the event Codex appends.');
    const markOption = stringOption(ctx, 'mark');
    if (markOption === undefined && !AGENT_NAME.test(names[0]!)) throw new UsageError(`"${names[0]}" cannot name a mark file; pass --mark FILE.`);

    let event: string | null = null;
    if (format === 'hook') {
      event = await hookToAnswer(ctx);
      if (event === null) return EXIT_OK;
    }
    if (format === 'codex-notify' && notifyType(ctx.positionals.at(-1)) !== 'agent-turn-complete') return EXIT_OK;

    const store = await openForCommand(ctx);
    try {
      const peek = ctx.values.peek === true;
      const place = markOption === undefined ? agentMark(store, names, peek) : fileMark(store, markOption);
      const start = await place.read();
      const self = new Set([names[0]!, ...(ctx.env.P_E_RELAY_AGENT ? [ctx.env.P_E_RELAY_AGENT] : [])]);
      const fresh = undelivered(names[0]!, start);
      const accept = (meta: RecordMeta, n: number) => fresh(meta, n) && !self.has(meta.from ?? '');
      const inbox = await collect(store, names, start.after, format === 'hook' ? HOOK_LIMITS : LIMITS, accept);
      const out = render(inbox, format, event);
      if (out !== '') await write(ctx.stdout, out);
      // Only now: a delivery that could not be written is delivered again.
      const through = store.shape.parse(inbox.mark)!;
      if (!peek && through > start.after) await place.deliverThrough(through);
      return EXIT_OK;
    } finally {
      await store.close();
    }
  },
};

/** Where an inbox keeps its place: read it, and move it past what was printed. */
interface Place {
  read(): Promise<Mark>;
  deliverThrough(n: number): Promise<unknown>;
}

/**
 * The agent's own mark for this filter set (spec §8d), the one its named
 * server's waits use: `--to scout-7 --to all` and `--to all --to scout-7`
 * share one, `--to scout-7` alone has another (lib/store/agents/marks.ts).
 */
function agentMark(store: RelayStore, names: string[], peek: boolean): Place {
  const agent = names[0]!;
  const filter = parseFilter({ to: names }, store.shape);
  return {
    // A first run notes the agent's start if it has none (where every set's broadcasts begin); a peek only looks.
    read: () => (peek ? store.agents.marks.current(agent, filter) : store.agents.marks.read(agent, filter)),
    deliverThrough: (n) => store.agents.marks.deliverThrough(agent, filter, n),
  };
}

/** `--mark FILE`: a mark where the caller says; none yet means from the start. Read and written as safely as the agents' own. */
function fileMark(store: RelayStore, file: string): Place {
  return {
    read: async () => (await store.agents.marks.vouched(file, await readMarkFile(file, store.shape))) ?? { after: 0, namedOnlyThrough: 0, delivered: [] },
    deliverThrough: async (n) => {
      await fs.mkdir(path.dirname(file), { recursive: true });
      await writeMarkFile(file, formatMark({ after: n, namedOnlyThrough: 0, delivered: [] }, store.shape));
    },
  };
}

/** The hook event to answer, or null when this run must print nothing and leave the mark (saying why on stderr, if it is a mistake). */
async function hookToAnswer(ctx: CommandContext): Promise<string | null> {
  const hook = parseHookEvent(await readAll(ctx.stdin));
  if ('problem' in hook) {
    ctx.log.warn(`inbox --format hook reads the hook event as JSON on stdin (with hook_event_name), as Claude Code and Codex send it; ${hook.problem}. Nothing delivered, the mark stays.`);
    return null;
  }
  if (!isHookEvent(hook.name)) {
    ctx.log.warn(`inbox: the ${hook.name} hook cannot show the model anything; hook it on PostToolUse, Stop, SubagentStop, UserPromptSubmit or SessionStart`);
    return null;
  }
  // This stop already follows a block of ours: let it through, so peers writing every turn cannot keep the agent going forever.
  if (isStopEvent(hook.name) && hook.stopHookActive) return null;
  return hook.name;
}

function notifyType(arg: string | undefined): unknown {
  try {
    return (JSON.parse(arg ?? '') as { type?: unknown }).type;
  } catch {
    throw new UsageError(`--format codex-notify takes the JSON Codex appends as its last argument; ${arg === undefined ? 'there was none' : `it was ${preview(arg)}`}.`);
  }
}

/**
 * `accept`: the mark's own test (not delivered yet, not the agent's own: its
 * broadcast to all would cost it a turn to read what it wrote).
 */
async function collect(store: RelayStore, names: string[], after: number, limits: Limits, accept: (meta: RecordMeta, n: number) => boolean): Promise<Inbox> {
  const items: InboxItem[] = [];
  let mark = after;
  let bytes = 0;
  let more = false;
  // spec §8a's `to` match, answered by the store's index (a to: naming several recipients included).
  const filter = parseFilter({ to: names }, store.shape);
  for (const { n, meta } of store.eachHeldAfter(after)) {
    if (store.matches(n, filter) && accept(meta, n)) {
      if (items.length === limits.maxItems) {
        more = true;
        break;
      }
      const text = await recordText(store, meta.id);
      // The record's lines count too (its claims are the author's, and must not ride outside the budget): the line that opens its fence, and about 64 bytes for the one that closes it.
      const head = Buffer.byteLength(itemHead(meta)) + meta.id.length + 64;
      const fits = text !== null && bytes + head + Buffer.byteLength(text) <= limits.maxBytes;
      // A record that would pass the budget waits for the next run, where it comes first; only one too big (or unreadable) by itself is named, not shown.
      if (!fits && items.length > 0 && (text !== null || bytes + head > limits.maxBytes)) {
        more = true;
        break;
      }
      bytes += head + (fits ? Buffer.byteLength(text) : 0);
      items.push({ id: meta.id, kind: meta.kind, from: meta.from, to: meta.to, depositedBy: meta.depositedBy, text: fits ? text : null });
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
