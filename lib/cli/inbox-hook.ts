/**
 * What `inbox --format hook` reads from a host's hook event (Claude Code and
 * Codex send it as JSON on stdin), and what it must never do with it.
 *
 * A hook's exit code is a message to its host: Claude Code reads exit 2 as
 * a blocking error and shows the model our stderr. So input we cannot read
 * is a warning on stderr and exit 0 with no output (the host carries on),
 * never a usage error; and the warning says what came instead of the event.
 */

export interface HookEvent {
  name: string;
  /**
   * Sent on Stop and SubagentStop: true when the agent is already going on
   * because a Stop hook blocked its last stop. Blocking again could keep it
   * from ever stopping while peers keep writing.
   */
  stopHookActive: boolean;
}

/** The hook events whose JSON answer can carry text to the model, and how (inbox-output.ts answers them). */
const CONTEXT_EVENTS = new Set(['PostToolUse', 'UserPromptSubmit', 'SessionStart']);
const STOP_EVENTS = new Set(['Stop', 'SubagentStop']);

export function isHookEvent(event: string): boolean {
  return CONTEXT_EVENTS.has(event) || STOP_EVENTS.has(event);
}

export function isStopEvent(event: string): boolean {
  return STOP_EVENTS.has(event);
}

/** The event, or a phrase saying what came instead (for the warning). */
export function parseHookEvent(input: Buffer): HookEvent | { problem: string } {
  const text = input.toString('utf8');
  if (text.trim() === '') return { problem: 'stdin was empty' };
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    return { problem: `stdin held ${input.length} bytes that are not JSON, starting ${preview(text)}` };
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return { problem: `stdin held JSON ${jsonKind(event)}, not an object` };
  const { hook_event_name: name, stop_hook_active: active } = event as Record<string, unknown>;
  if (typeof name !== 'string') {
    const keys = Object.keys(event).slice(0, 8).join(', ');
    return { problem: `stdin held a JSON object without a hook_event_name string (${keys ? `its keys: ${keys}` : 'it is empty'})` };
  }
  return { name, stopHookActive: active === true };
}

function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/**
 * `inbox --format hook …`: a run whose mistakes (a bad option in the hook's
 * own command line) exit 1, which Claude Code shows the user and goes on
 * from, instead of 2, which it takes as a block: on a Stop hook, one that
 * would fire again at every stop.
 */
export function runsAsHook(command: string, argv: readonly string[]): boolean {
  return command === 'inbox' && argv.some((arg, i) => arg === '--format=hook' || (arg === '--format' && argv[i + 1] === 'hook'));
}

/** What a value looked like, quoted and cut short, control characters escaped. */
export function preview(text: string): string {
  return JSON.stringify(text.length > 40 ? text.slice(0, 40) + '…' : text);
}
