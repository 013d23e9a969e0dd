/**
 * Builds one MCP server from the table of tools (tools/index.ts). This is
 * the only module that hands tools to the SDK: the definitions are plain
 * data and zod shapes, and everything SDK-shaped (registerTool, the
 * handler's extra, progress notifications) happens in `registerTools`.
 * Transports are separate entry points (transports/stdio.ts, and POST /mcp
 * in lib/http/mcp-endpoint.ts); each builds its server with this factory
 * and tells the tools which door they serve.
 */
import { z } from 'zod';
import { McpServer, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import { asRelayError, RelayError } from '../errors.js';
import type { RelayStore } from '../store/store.js';
import { VERSION } from '../version.js';
import type { DoorRef } from '../doors/door.js';
import { answer, refusal } from './result.js';
import { SESSION_ID, SESSION_META } from '../model/session.js';
import { instructions, type Caller } from './instructions.js';
import { withoutDialect } from './listed-schema.js';
import { TOOLS, type ToolDefinition, type ToolFacts } from './tools/index.js';
import type { ToolHints } from './tools/tool.js';

export const SERVER_NAME = 'p-e-relay';

/** What serving calls needs; a server built without it only lists its tools. */
export interface Serving {
  store: RelayStore;
  door: DoorRef;
}

/**
 * tools/list stays valid for a minute in a client's cache (2026-07-28
 * `ttlMs`), for any client (`public`): the six tools change only when the
 * server restarts with other settings, and they are the same for everyone.
 */
export const LIST_CACHE = { ttlMs: 60_000, cacheScope: 'public' } as const;

/**
 * A server whose tools call `store`, asking `door` for what each call needs.
 * Built per connection (stdio) or per request (HTTP) by the v2 SDK's serving
 * entries, it serves whichever protocol era the entry picked. The tools are
 * the same for every caller; `caller` only names the agent in the instructions.
 */
export function createMcpServer(store: RelayStore, door: DoorRef, caller: Caller): McpServer {
  return buildServer({ shape: store.shape }, { store, door }, caller);
}

/**
 * A server that only answers tools/list, with the definitions as a store
 * with these facts would state them (the bridge's fallback list). Its tools
 * refuse every call: there is no store behind them.
 */
export function createListingServer(facts: ToolFacts, caller: Caller = { http: true }): McpServer {
  return buildServer(facts, null, caller);
}

/**
 * The channel capability (Claude Code's `claude/channel`, lib/mcp/channel/):
 * declared by every named stdio server, since a host registers its listener
 * from the initialize answer, before the server knows whether it will push
 * (attach.ts decides). To any other host it is an unknown experimental key,
 * which MCP says to ignore.
 */
const CHANNEL_CAPABILITY = { experimental: { 'claude/channel': {} } };

function buildServer(facts: ToolFacts, serving: Serving | null, caller: Caller): McpServer {
  const capabilities = { tools: {}, ...(caller.channel ? CHANNEL_CAPABILITY : {}) };
  const server = new McpServer({ name: SERVER_NAME, version: VERSION }, { capabilities, instructions: instructions(caller), cacheHints: { 'tools/list': LIST_CACHE } });
  refuseLikeTheTools(server);
  registerTools(server, facts, serving);
  return server;
}

/**
 * Arguments the input schema refuses are answered by the SDK itself, as an
 * isError result with a bare sentence made by its private `createToolError`
 * (the only seam there is); this one says what to send instead and carries
 * the stable code every other refusal carries (the door has counted it, see
 * countingRefusals). test/system/protocol-eras.test.ts asserts the code, so an SDK
 * that renames the seam fails there.
 */
function refuseLikeTheTools(server: McpServer): void {
  (server as unknown as { createToolError(message: string): CallToolResult }).createToolError = (message) =>
    refusal(
      /^Input validation error|Invalid arguments/.test(message)
        ? new RelayError('invalid_arguments', `${message}. Send the arguments the tool's inputSchema describes (tools/list shows it): the right names, types and ranges.`)
        : new RelayError('internal', message),
    );
}

function registerTools(server: McpServer, facts: ToolFacts, serving: Serving | null): void {
  for (const tool of TOOLS) {
    const { description, input, output } = tool.contract(facts);
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description,
        inputSchema: withoutDialect(countingRefusals(z.object(input), () => serving?.door.current?.refused('invalid_arguments'))),
        ...(output ? { outputSchema: withoutDialect(z.object(output)) } : {}),
        // No annotations.title: the tool's own title says it, and MCP shows that one first.
        annotations: listedHints(tool.hints),
      },
      (args: Record<string, unknown>, ctx: ServerContext) => call(tool, args, ctx, serving),
    );
  }
}

/**
 * A tool's hints as tools/list shows them: each one MCP's default does not
 * already say. MCP's defaults are readOnlyHint false, destructiveHint true,
 * idempotentHint false and openWorldHint true, and destructiveHint and
 * idempotentHint mean something only where readOnlyHint is false; a hint
 * left out reads as its default, so the meaning is the same, in fewer bytes.
 */
export function listedHints(hints: ToolHints): Partial<ToolHints> {
  const out: Partial<ToolHints> = {};
  if (hints.readOnlyHint) out.readOnlyHint = true;
  if (!hints.readOnlyHint && hints.destructiveHint === false) out.destructiveHint = false;
  if (!hints.readOnlyHint && hints.idempotentHint) out.idempotentHint = true;
  if (!hints.openWorldHint) out.openWorldHint = false;
  return out;
}

/**
 * The SDK checks a call's arguments against the input schema and answers a
 * failure itself, before any handler (so before any door) sees the call. A
 * check that never fails but is told when the object's own parse did lets
 * the door count that refusal too (as invalid_arguments); it adds nothing to
 * the JSON Schema tools/list shows.
 */
function countingRefusals<T extends z.ZodObject>(schema: T, refused: () => void): T {
  return schema.check(
    z.refine(() => true, {
      when: (payload) => {
        if (payload.issues.length > 0) refused();
        return false;
      },
    }),
  );
}

/**
 * The session a call names in its `_meta` (a bridge names its own, in the
 * signed body), or '' when it names none; one that is not a session id is
 * refused before anything is proved.
 */
function sessionOf(ctx: ServerContext): string {
  const named = (ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[SESSION_META];
  if (named === undefined) return '';
  if (typeof named === 'string' && SESSION_ID.test(named)) return named;
  throw new RelayError('bad_session', `_meta["${SESSION_META}"] must be a session id: 8 to 64 characters of A-Z, a-z, 0-9, _ and -, made once ` +
    'per session (e.g. 16 random bytes in base64url). Nothing was run and nothing counted as received. Send one of that form, or leave it out.');
}

/** Runs one call through its door; a refusal is answered as a tool result, never thrown, and the door counts it. */
async function call(tool: ToolDefinition, args: Record<string, unknown>, ctx: ServerContext, serving: Serving | null): Promise<CallToolResult> {
  const door = serving?.door.current;
  try {
    if (!serving) throw new RelayError('internal', `${tool.name} cannot run here: this server only lists the tools. Call it through a server that has a store.`);
    if (!door) throw new RelayError('internal', 'This call reached a server that is not serving a request. Send it again.');
    return await door.run(tool.door, async (grant) => {
      // A named agent's call is its proof that it got what this server answered its session before (spec §8d).
      const session = sessionOf(ctx);
      if (grant.agent !== null) await serving.store.agents.seen(grant.agent, grant.depositedBy === 'mcp' ? 'served' : 'signed', session);
      const signal = grant.signal ? AbortSignal.any([ctx.mcpReq.signal, grant.signal]) : ctx.mcpReq.signal;
      const progressToken = ctx.mcpReq._meta?.progressToken;
      const progress =
        tool.door.progress && progressToken !== undefined
          ? (progress: number, message: string) =>
              void ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => {})
          : undefined;
      const result = await tool.run(serving.store, args, { grant, signal, progress, session });
      // A door that ended the call for a reason of its own (a revoked key) says so.
      if (grant.signal?.aborted && grant.signal.reason instanceof RelayError) throw grant.signal.reason;
      return answer(result.text, result.structured);
    });
  } catch (err) {
    const refused = asRelayError(err);
    door?.refused(refused.code);
    return refusal(refused);
  }
}
