/**
 * What `p-e-relay inbox` prints, in the shapes agents' hosts read (SPEC §8a,
 * "waking an agent that is busy"; docs/agents.md has the recipes):
 *
 * - `hook`: a command hook of Claude Code or Codex. The host sends the
 *   event as JSON on stdin; the answer is the JSON that event's output
 *   takes to reach the model: after a tool call (PostToolUse) or at the
 *   start of a turn (UserPromptSubmit, SessionStart) as
 *   `hookSpecificOutput.additionalContext`; before the agent stops (Stop,
 *   SubagentStop) as `{"decision":"block","reason":…}`, which keeps it
 *   working with the reason as its next instruction. Nothing new: no output
 *   at all, so the host carries on (and a Stop is allowed).
 * - `codex-notify`: Codex's `notify` program, which gets its event as the
 *   last argument and whose output no model reads: one line per record, for
 *   a desktop notifier, and only on `agent-turn-complete`.
 * - `text` for people and hosts that show a command's output; `json` for scripts.
 *
 * Pure: no disk, no streams.
 */

export interface InboxItem {
  id: string;
  kind: string | null;
  from: string | null;
  to: string | null;
  /** The record's own bytes (below the deposit header), or null when past the size budget. */
  text: string | null;
}

export interface Inbox {
  to: string[];
  items: InboxItem[];
  /** The mark after this delivery: the last id considered. */
  mark: string;
  /** More records may be waiting beyond what one delivery carries. */
  more: boolean;
}

export const FORMATS = ['text', 'json', 'hook', 'codex-notify'] as const;
export type Format = (typeof FORMATS)[number];

/** The hook events whose JSON answer can carry text to the model, and how. */
const CONTEXT_EVENTS = new Set(['PostToolUse', 'UserPromptSubmit', 'SessionStart']);
const STOP_EVENTS = new Set(['Stop', 'SubagentStop']);

export function isHookEvent(event: string): boolean {
  return CONTEXT_EVENTS.has(event) || STOP_EVENTS.has(event);
}

/** The text a model reads: what arrived, and how to answer it (as `inbox.to[0]`, the agent the mark is named for). */
export function inboxText(inbox: Inbox): string {
  const names = inbox.to.join(', ');
  const lines = [`p-e-relay: ${inbox.items.length} new record${inbox.items.length === 1 ? '' : 's'} addressed to ${names}.`];
  for (const item of inbox.items) {
    lines.push('', `--- ${item.id}${claim('kind', item.kind)}${claim('from', item.from)}${claim('to', item.to)} ---`);
    lines.push(item.text === null ? `(not shown: over this delivery's size budget; read it with get_relay ${item.id})` : item.text.replace(/\n$/, ''));
  }
  // The same recipe as wait_for_relay's loop: from: and the answer key make a repeated answer (this hook fires again, the loop sees it too) store nothing.
  const you = inbox.to[0]!;
  lines.push('', `To answer one: append_relay bytes "@p-e/x0\\nkind: answer\\nfrom: ${you}\\nto: <its from>\\nparent: <its id>\\n\\n<answer>", idempotency_key "${you}/answer/<its id>".${inbox.more ? ' More records are waiting; they come with the next delivery.' : ''}`);
  return lines.join('\n');
}

function claim(name: string, value: string | null): string {
  return value === null ? '' : `, ${name}: ${value}`;
}

/** One line per record, for a notifier: `relay-0042 question from planner: first line of the body`. */
export function notifyLines(inbox: Inbox): string {
  return inbox.items
    .map((item) => {
      const body = item.text === null ? '' : bodyOf(item.text).split('\n').find((line) => line.trim() !== '') ?? '';
      return `${item.id}${item.kind ? ` ${item.kind}` : ''}${item.from ? ` from ${item.from}` : ''}${body ? `: ${body.slice(0, 160)}` : ''}`;
    })
    .join('\n');
}

function bodyOf(text: string): string {
  const blank = text.search(/\r?\n\r?\n/);
  return blank === -1 ? '' : text.slice(blank).trim();
}

/** The JSON a hook prints for `event`, carrying `text` to the model. */
export function hookAnswer(event: string, text: string): string {
  if (STOP_EVENTS.has(event)) return JSON.stringify({ decision: 'block', reason: text });
  return JSON.stringify({ hookSpecificOutput: { hookEventName: event, additionalContext: text } });
}

/** Everything printed for one delivery ('' when there is nothing to say). */
export function render(inbox: Inbox, format: Format, event: string | null): string {
  if (format === 'json') return JSON.stringify(inbox) + '\n';
  if (inbox.items.length === 0) return format === 'text' ? `p-e-relay: nothing new for ${inbox.to.join(', ')}\n` : '';
  if (format === 'hook') return hookAnswer(event!, inboxText(inbox)) + '\n';
  if (format === 'codex-notify') return notifyLines(inbox) + '\n';
  return inboxText(inbox) + '\n';
}
