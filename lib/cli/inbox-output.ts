/**
 * What `p-e-relay inbox` prints, in the shapes agents' hosts read (spec §8a,
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
 * Pure: no disk, no streams (the fence's boundary is drawn at random).
 */
import { drawBoundary, fenceRule, fenced } from '../model/fence.js';
import { claims, UNPROVEN } from '../doors/render.js';
import { signedBy } from '../model/agent-name.js';
import { claimText } from '../model/claim-text.js';
import { recordBody } from '../model/record.js';
import { isStopEvent } from './inbox-hook.js';

export interface InboxItem {
  id: string;
  kind: string | null;
  from: string | null;
  to: string | null;
  /** The channel the store took it from (its deposit header): unlike from:, not the author's to write. */
  depositedBy: string;
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

/**
 * The text a model reads: what arrived, each record's own text fenced so no
 * record can pose as another (fence.ts), and, when one is a question, how to
 * answer it as `inbox.to[0]` (the agent the mark is named for).
 */
export function inboxText(inbox: Inbox): string {
  const names = inbox.to.join(', ');
  const lines = [`p-e-relay: ${inbox.items.length} new record${inbox.items.length === 1 ? '' : 's'} addressed to ${names}.`];
  const shown = inbox.items.flatMap((item) => (item.text === null ? [] : [item.text]));
  const boundary = drawBoundary(shown);
  if (shown.length > 0) lines.push(fenceRule(boundary));
  for (const item of inbox.items) {
    const head = itemHead(item);
    lines.push('');
    if (item.text === null) lines.push(`${item.id}${head}: not shown, over this delivery's size budget; read it with get_relay ${item.id}`);
    else lines.push(...fenced(item.id, boundary, head, item.text));
  }
  if (inbox.items.some((item) => item.kind?.toLowerCase() === 'question')) lines.push('', answerRecipe(inbox.to[0]!));
  if (inbox.more) lines.push('', 'More records are waiting; they come with the next delivery.');
  return lines.join('\n');
}

/**
 * What follows a record's id on its line. deposited-by is the store's fact,
 * not the author's claim: the one part a forged from: cannot change; where
 * no key proves the sender, the line says so as a wait's item does. The
 * claims are cut to claim-text.ts's cap, and a delivery's budget counts
 * this line as well as the record's text (inbox-command.ts).
 */
export function itemHead(item: Pick<InboxItem, 'kind' | 'from' | 'to' | 'depositedBy'>): string {
  return `${claims(item)} deposited-by ${item.depositedBy}${signedBy(item.depositedBy) === null ? UNPROVEN : ''}`;
}

/** The same recipe as wait_for_relay's loop: from: and the answer key make a repeated answer (this hook fires again, the loop sees it too) store nothing. */
function answerRecipe(you: string): string {
  return `To answer one: append_relay bytes "@p-e/x0\\nkind: answer\\nfrom: ${you}\\nto: <its from>\\nparent: <its id>\\n\\n<answer>", idempotency_key "${you}/answer/<its id>".`;
}

/** One line per record, for a notifier: `relay-0042 question from planner: first line of the body`. */
export function notifyLines(inbox: Inbox): string {
  return inbox.items
    .map((item) => {
      const body = item.text === null ? '' : recordBody(item.text).trim().split('\n').find((line) => line.trim() !== '') ?? '';
      return `${item.id}${item.kind ? ` ${claimText(item.kind, 'kind')}` : ''}${item.from ? ` from ${claimText(item.from, 'from')}` : ''}${body ? `: ${body.slice(0, 160)}` : ''}`;
    })
    .join('\n');
}

/** The JSON a hook prints for `event`, carrying `text` to the model. */
export function hookAnswer(event: string, text: string): string {
  if (isStopEvent(event)) return JSON.stringify({ decision: 'block', reason: text });
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
