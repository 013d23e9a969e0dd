/**
 * Who is here, on the first inbox wait of a bridge session.
 *
 * The contract says an inbox wait's answer carries `agents` the first time
 * and whenever someone joins (lib/mcp/tools/roster-news.ts). A stdio server
 * keeps that promise per session because a session is a process. The hub
 * is one long-lived process that cannot tell a bridge's sessions apart (its
 * calls are stateless, and only signed tools are signed), so it tells an
 * agent the roster once per hub process: an agent whose host restarts gets
 * no `agents` until someone new joins, and its model, which remembers
 * nothing, has no way to learn who knows what. The bridge is where a
 * session is known, so it fills the gap: if the session's first inbox
 * answer lacks `agents`, or carries news of some names only (after its
 * first answer the hub sends only who joined or restated an about), it
 * reads the hub's public roster (GET /agents) and gives it whole, in the
 * same form the hub would, with the `next` the hub says beside news of who
 * is here (lib/mcp/tools/next-steps.ts).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Logger } from '../log.js';
import { FILTER_FIELDS } from '../model/filter.js';
import { NEWS_OF_SOME, rosterLine, type AgentHere } from '../mcp/tools/roster-news.js';
import { rosterSteps, withNextLine } from '../mcp/tools/next-steps.js';

/** An inbox wait: no `after` (a read of history) and none of the filters (a narrower set has no roster), whichever the table holds. */
export function isInboxWait(name: string, args: Record<string, unknown> | undefined): boolean {
  if (name !== 'wait_for_relay') return false;
  return args?.after === undefined && FILTER_FIELDS.every((field) => args?.[field.name] === undefined);
}

export class SessionRoster {
  private shown = false;

  constructor(
    private readonly hubBase: string,
    private readonly agent: string,
    private readonly log: Logger,
  ) {}

  /** The hub's answer to an inbox wait, with `agents` added when this session has not had them yet. */
  async complete(result: CallToolResult): Promise<CallToolResult> {
    if (this.shown || result.isError) return result;
    const structured = result.structuredContent as Record<string, unknown> | undefined;
    if (!structured) return result;
    // News of some names only (the hub told this agent the rest in an earlier session) is not the whole roster.
    const first = result.content[0];
    const some = first?.type === 'text' && first.text.includes(`\n${NEWS_OF_SOME}`);
    if (structured.agents !== undefined && !some) {
      this.shown = true;
      return result;
    }
    const read = await this.read();
    if (read === null) return result;
    this.shown = true;
    const { agents, aboutOfMine } = read;
    // Where the hub sent news of some names, its next already says what that news asks.
    const steps = some ? [] : rosterSteps(aboutOfMine ? 'news' : 'news, no about of yours');
    const next = [...(typeof structured.next === 'string' ? [structured.next] : []), ...steps].join(' ');
    const withoutSome = (text: string) => text.split('\n').filter((line) => !line.startsWith(NEWS_OF_SOME)).join('\n');
    const text = (block: string) => withNextLine(`${withoutSome(block)}\n${rosterLine(agents)}`, next);
    const content = result.content.map((block, i) => (i === 0 && block.type === 'text' ? { ...block, text: text(block.text) } : block));
    return { ...result, content, structuredContent: { ...structured, agents, next } };
  }

  /** The hub's roster less this agent, as the hub's own wait would give it, and whether this agent stated an about; null if the hub did not answer (the next inbox wait tries again). */
  private async read(): Promise<{ agents: AgentHere[]; aboutOfMine: boolean } | null> {
    try {
      const response = await fetch(`${this.hubBase}/agents`, { headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(5_000) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const { agents } = (await response.json()) as { agents: { name: string; waiting: boolean; about?: string }[] };
      const others = agents
        .filter((entry) => entry.name !== this.agent)
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .map(({ name, waiting, about }) => (about === undefined ? { name, waiting } : { name, waiting, about }));
      return { agents: others, aboutOfMine: agents.some((entry) => entry.name === this.agent && entry.about !== undefined) };
    } catch (err) {
      this.log.debug(`cannot read the hub's roster for this session's first wait: ${(err as Error).message}`);
      return null;
    }
  }
}
