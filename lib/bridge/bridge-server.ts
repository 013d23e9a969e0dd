/**
 * `p-e-relay bridge`: a stdio MCP server that any MCP client can spawn,
 * forwarding the six tools to a remote hub over Streamable HTTP and signing
 * what the hub requires signed with the local key. The client sees the
 * hub's own tools; the bridge holds no store and no state beyond one
 * connection.
 *
 * It answers the client's handshake at once, without waiting for the hub,
 * so a client starts even while the hub is down; calls made then are
 * refused with hub_unreachable, and work as soon as the hub is back.
 * stdout is the MCP channel: every log line goes to stderr.
 *
 * Both protocol eras toward its client, as `serve` does (the v2 SDK's
 * `serveStdio`: the client's first message picks), whatever the era it
 * negotiated with the hub: the two legs are independent.
 */
import { Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Logger } from '../log.js';
import { DrainingStdio, maxLineBytes } from '../mcp/transports/draining-stdio.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../model/record.js';
import { VERSION } from '../version.js';
import { instructions } from '../mcp/instructions.js';
import { LIST_CACHE } from '../mcp/server.js';
import { bridgeKey, keyFileWarning } from './bridge-key.js';
import { BridgeSession } from './bridge-session.js';
import { forwardCall } from './forward-call.js';
import type { HubSide } from './hub-answers.js';
import { HubClient } from './hub-client.js';
import { hubFetch } from './hub-fetch.js';
import type { HubUrl } from './hub-url.js';
import { SessionRoster } from './session-roster.js';
import { ToolList } from './tool-list.js';

export interface BridgeOptions {
  hub: HubUrl;
  agent: string;
  keys: string;
  log: Logger;
}

/** Builds the bridge: a factory for its MCP server (one per connection); `close` ends its connection to the hub. */
export function createBridge(options: BridgeOptions): { server(): Server; check(): Promise<void>; close(): Promise<void> } {
  const { hub: hubUrl, agent, log } = options;
  const key = bridgeKey(options.keys, agent);
  const side: HubSide = { url: hubUrl.base, agent, keyFile: key.file };
  const hub = new HubClient(hubUrl, hubFetch(key, side, log), side, log);
  let current: Server | null = null;
  const tools = new ToolList(hub, () => void current?.sendToolListChanged().catch(() => {}), log);
  // One session on the hub per bridge process (a stdio connection is one session): what the hub counts as proof is its own.
  const forward = forwardCall({ hub, tools, log, agent, roster: new SessionRoster(hubUrl.base, agent, log), session: new BridgeSession() });
  const server = () => {
    // The agent's contract, word for word as a named stdio server gives it (lib/mcp/instructions.ts), and the
    // tool list held as long as a server's: the copy the bridge answers from is checked against the hub's (tool-list.ts).
    const built = new Server(
      { name: 'p-e-relay-bridge', version: VERSION },
      { capabilities: { tools: { listChanged: true } }, instructions: instructions({ agent }), cacheHints: { 'tools/list': LIST_CACHE } },
    );
    built.setRequestHandler('tools/list', async () => ({ tools: await tools.current() }));
    built.setRequestHandler('tools/call', (request, ctx) => forward(request, ctx));
    current = built;
    return built;
  };
  const check = () =>
    hub.negotiated(5_000).then(
      (version) => log.debug(`the hub at ${hubUrl.base} answers (MCP ${version})`),
      (err) => log.warn(`the hub at ${hubUrl.base} does not answer yet: ${(err as Error).message}`),
    );
  return { server, check, close: () => hub.close() };
}

export async function serveBridge(options: BridgeOptions): Promise<void> {
  const { log } = options;
  const bridge = createBridge(options);
  // A forwarded record can be as long as any the hub takes; the hub refuses what it will not store.
  const transport = new DrainingStdio(process.stdin, process.stdout, maxLineBytes(DEFAULT_MAX_RECORD_BYTES));
  const handle = serveStdio(bridge.server, { transport, onerror: (err) => log.warn(`stdio: ${err.message}`) });
  log.info(`bridge to ${options.hub.mcp.href} as agent ${options.agent}`);
  const warning = await keyFileWarning(bridgeKey(options.keys, options.agent));
  if (warning) log.warn(warning);
  // Say now, where the operator looks, if the hub is not there; calls retry it anyway.
  void bridge.check();

  // The client closing our stdin is how a stdio session ends.
  await new Promise<void>((resolve) => {
    transport.onended = resolve;
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await handle.close().catch(() => {});
  await bridge.close();
}
