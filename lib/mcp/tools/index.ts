/**
 * The table of tools. Adding a tool is one file exporting its definition
 * (tool.ts says what one holds) and one line here; the server registers
 * every entry, and the doors read their facts from here.
 */
import { appendRelay } from './append-relay.js';
import { exists } from './exists.js';
import { getRelay } from './get-relay.js';
import { listRelays } from './list-relays.js';
import { listReplies } from './list-replies.js';
import type { ToolDefinition } from './tool.js';
import { waitForRelay } from './wait-for-relay.js';

export const TOOLS: readonly ToolDefinition<any>[] = [appendRelay, exists, getRelay, listRelays, listReplies, waitForRelay];

const byName = new Map(TOOLS.map((tool) => [tool.name, tool]));

/** The tool of that name, or undefined for a name that is not one of ours. */
export function toolNamed(name: unknown): ToolDefinition<any> | undefined {
  return typeof name === 'string' ? byName.get(name) : undefined;
}

export type { ToolDefinition, ToolFacts } from './tool.js';
