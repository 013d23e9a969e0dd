/** `bridge`: a stdio MCP server that forwards to a remote hub, signing what must be signed. */
import { isAgentName } from '../auth/keys.js';
import { UsageError, stringOption, type Command } from './command.js';

export const bridgeCommand: Command = {
  help: `Usage: p-e-relay bridge --url URL --agent A [--keys DIR]

Runs a stdio MCP server for an MCP client to spawn (Claude Desktop, Claude
Code, the MCP Inspector, any client that speaks stdio). It offers the hub's
six tools and forwards every call to the hub at URL over Streamable HTTP.
append_relay and wait_for_relay are signed with the key in DIR/A.key, a
fresh signature per call; the reads go unsigned. A long wait_for_relay stays
alive past a client's 60 s timeout through progress notifications, when the
client sends a progress token. Problems between the bridge and the hub come
back as tool refusals with a code (docs/bridge.md).

  --url URL     the hub, as \`serve --http\` prints it (http://127.0.0.1:7077);
                the bridge posts to URL/mcp (a URL ending in /mcp is used as is)
  --agent A     the agent to sign as: the hub must hold a key for A
  --keys DIR    where A.key is (env P_E_RELAY_KEYS, default ./keys); give an
                absolute path in a client's config, which may start the
                bridge in any directory

stdout is the MCP channel; logs go to stderr.
Environment: P_E_RELAY_LOG=debug|info|warn|error|silent sets the log level.`,
  // The bridge holds no corpus, so --corpus is not among its options and the keys are not looked for beside one.
  commonHelp: `Common options:
  -h, --help    this help`,
  options: {
    url: { type: 'string' },
    agent: { type: 'string' },
  },
  async run(ctx) {
    if (ctx.values.corpus !== undefined) throw new UsageError('the bridge holds no corpus (the hub does); leave out --corpus.');
    const url = stringOption(ctx, 'url');
    const agent = stringOption(ctx, 'agent');
    if (url === undefined) throw new UsageError('--url is required: the hub to forward to, e.g. --url http://127.0.0.1:7077.');
    if (agent === undefined) throw new UsageError('--agent is required: the agent whose key signs appends and waits.');
    if (!isAgentName(agent)) throw new UsageError(`--agent "${agent}" is not an agent name: 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit (it names the key file).`);
    const { parseHubUrl } = await import('../bridge/hub-url.js');
    const hub = parseHubUrl(url);
    if (hub === null) throw new UsageError(`--url "${url}" is not an http:// or https:// URL; give the hub's address, e.g. http://127.0.0.1:7077.`);
    const { serveBridge } = await import('../bridge/bridge-server.js');
    // --keys, else P_E_RELAY_KEYS, else ./keys, as its help says: never keys beside a P_E_RELAY_CORPUS it does not use.
    const keys = stringOption(ctx, 'keys') ?? (ctx.env.P_E_RELAY_KEYS || 'keys');
    await serveBridge({ hub, agent, keys, log: ctx.log });
    return 0;
  },
};
