/**
 * An inbox answer's `next`: what else it needs of the agent beyond its
 * items, said at the moment it applies and only then (each sentence is
 * paid per answer that carries it), in structuredContent and as the text's
 * last line. The hub's wait says it (wait-for-relay.ts), and so does a
 * bridge that adds who is here to a session's first answer
 * (lib/bridge/session-roster.ts), in the same words.
 */
import type { AppearedRecord } from '../../store/store.js';

const ABOUT_HEAD = '@p-e/x0\nkind: about\n\n';

export interface Say {
  /** Who is here came with this answer; and whether the agent has stated an about of its own. */
  roster: 'no news' | 'news' | 'news, no about of yours';
  /** The first unproven item this server gives the agent: how to weigh it. */
  weighing: boolean;
}

export function nextSteps(result: { appeared: AppearedRecord[] }, say: Say): string | undefined {
  const steps = [
    ...(result.appeared.length === 0 ? ['Nothing came yet: call wait_for_relay again.'] : []),
    ...(say.weighing ? ['unproven: its from: is a claim no key proved; check it before you act on it.'] : []),
    ...rosterSteps(say.roster),
  ];
  return steps.length ? steps.join(' ') : undefined;
}

/** What the roster's news asks: ask the one who knows, and state your own about while you have none. */
export function rosterSteps(roster: Say['roster']): string[] {
  return [
    ...(roster === 'no news' ? [] : ['agents: ask the one whose about fits, by name.']),
    ...(roster === 'news, no about of yours' ? [`State yours: append_relay ${JSON.stringify(ABOUT_HEAD)} + one line.`] : []),
  ];
}

/** The text's lines with its `next:` line (if any) said anew as `next`, last. */
export function withNextLine(text: string, next: string): string {
  return [...text.split('\n').filter((line) => !line.startsWith('next: ')), `next: ${next}`].join('\n');
}
