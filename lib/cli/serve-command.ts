/** `serve`: the MCP server over stdio (the default), or the HTTP hub with --http. */
import { DEFAULT_RECORD_CAP } from '../http/body.js';
import { DEFAULT_LIMITS } from '../http/limits.js';
import { DEFAULT_HOST, DEFAULT_PORT } from '../http/defaults.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../model/record.js';
import type { StoreOptions } from '../store/store.js';
import type { Forwarding } from '../doors/door.js';
import { UsageError, numberOption, stringOption, type Command, type CommandContext } from './command.js';
import { pollOption } from './poll-option.js';
import { checkAbout } from '../model/about.js';
import { checkAgentName } from '../model/agent-name.js';
import { invokedAs } from './invoked-as.js';
import { hubKeySigner } from '../auth/hub-key.js';
import type { ServeHttpOptions } from '../http/serve-http.js';
import { CHECKPOINT_HELP, CHECKPOINT_OPTIONS, checkpointCadence, checkpointKeyOption } from './checkpoint-options.js';

export const serveCommand: Command = {
  help: `Usage: p-e-relay serve [--stdio] [options]
       p-e-relay serve --http [--host H] [--port N] [options]

Runs the MCP server over stdio: an MCP client spawns it and talks on its
stdin/stdout; logs go to stderr. Every agent's client may spawn its own; they
all share one corpus.

With --http, runs the hub instead: MCP over Streamable HTTP at /mcp, REST at
/relays, the event stream at /events, /healthz and /metrics (docs/http.md).
Appends and waits must be signed with a key from the keys directory.

  --stdio                 serve MCP over stdio (the default)
  --agent NAME            stdio: the agent this server serves (env P_E_RELAY_AGENT;
                          lower-case letters, digits, '.', '_', '-'). Its records
                          are stamped "agent: NAME", one whose from: names
                          another agent is refused (from_mismatch), and a wait
                          without after continues from the agent's own mark
                          (docs/agents.md). Over HTTP the name is the signing agent
  --about TEXT            with --agent: state the agent's about at start, one line
                          of what it does and knows that the roster shows beside
                          its name (a "kind: about" record, stored only when it
                          differs from the agent's about now; docs/agents.md)
  --channel               with --agent: push each record addressed to the agent into
                          the session as a Claude Code channel notification, counted
                          delivered (env P_E_RELAY_CHANNEL=1; docs/agents.md)
  --http                  serve the HTTP hub
  --host H                with --http: the address to bind (default ${DEFAULT_HOST});
                          on loopback, Host and Origin are checked against DNS rebinding
  --port N                with --http: the port (default ${DEFAULT_PORT}; 0 takes any free one)
  --record-cap N          with --http: the largest record in bytes, counted in the
                          record's own bytes on every door (default ${DEFAULT_RECORD_CAP})
  --body-cap N            with --http: the largest request body in bytes (default: what a
                          record of the record cap needs as JSON, 6 × it + 8,192)
  --allow-origin ORIGIN   with --http: a web origin whose pages may call the hub
                          (repeatable; loopback origins are always allowed)
  --append-rate N         with --http: appends per second per agent (default ${DEFAULT_LIMITS.appendsPerSecond}, bursts of twice that)
  --strict-recipients     refuse a named agent's record whose to: names someone
                          not on the roster (unknown_recipient); without it the
                          append lands and its answer lists them (unknownRecipients)
  --read-only             answer reads and waits; refuse appends (a mirror)
  --primary URL           with --read-only: where appends should go instead
  --forward               a replica: a read-only mirror (kept filled by \`mirror
                          --every\`) that sends each append to the hub at --primary
                          URL, signed as the agent (stdio: --agent, which it needs,
                          with its key in --keys, the primary's key, copied;
                          --http: the client's own signed request, checked here
                          with --keys and sent on as it came), and answers once the
                          primary stored it and it reached this mirror (up to
                          10 s); reads and waits answer here. With the primary
                          unreachable, appends are refused hub_unreachable, never
                          queued (docs/scaling.md)
  --poll MS               find new records by listing the corpus every MS
                          milliseconds instead of kernel events (NFS, sshfs
                          and other filesystems other hosts write to; there
                          the corpus is listed every 1000 ms without it)
  --wake bells|directory  how a waiting caller hears records other processes
                          add: \`bells\` (the default) wakes a process only for
                          records addressed to (to:) or replying to
                          (replies_to) what its waits filter on. Writers that
                          ring no bell (git pull, a plain copy, rsync into a
                          live corpus) are then heard at the next listing
                          (~2 s, longer on a busy corpus); where such a writer
                          feeds the corpus and its records must be heard at
                          once, \`directory\` wakes every server for every
                          record instead (docs/scaling.md)
  --max-record-bytes N    the largest record accepted (default ${DEFAULT_MAX_RECORD_BYTES})
  --exit-with-parent      with --http: stop when the process that started the hub
                          goes away (\`npm start\` passes it)
${CHECKPOINT_HELP}

Environment: P_E_RELAY_LOG=debug|info|warn|error|silent sets the log level.`,
  options: {
    stdio: { type: 'boolean' },
    agent: { type: 'string' },
    about: { type: 'string' },
    channel: { type: 'boolean' },
    http: { type: 'boolean' },
    host: { type: 'string' },
    port: { type: 'string' },
    'body-cap': { type: 'string' },
    'record-cap': { type: 'string' },
    'allow-origin': { type: 'string', multiple: true },
    'append-rate': { type: 'string' },
    'read-only': { type: 'boolean' },
    'strict-recipients': { type: 'boolean' },
    primary: { type: 'string' },
    forward: { type: 'boolean' },
    poll: { type: 'string' },
    wake: { type: 'string' },
    'max-record-bytes': { type: 'string' },
    'exit-with-parent': { type: 'boolean' },
    ...CHECKPOINT_OPTIONS,
  },
  async run(ctx) {
    if (ctx.values.http === true) {
      if (ctx.values.stdio === true) throw new UsageError('--stdio and --http are two different servers; pick one.');
      if (ctx.values.agent !== undefined) throw new UsageError('--agent names a stdio server\'s agent; over --http each request is named by the agent that signs it.');
      if (ctx.values.about !== undefined) throw new UsageError('--about states a stdio server\'s agent\'s about; over --http each agent appends its own (kind: about).');
      if (ctx.values.channel !== undefined) throw new UsageError('--channel pushes into a stdio session; the HTTP hub has no channel to push into.');
      const { serveHttp } = await import('../http/serve-http.js');
      const rate = numberOption(ctx, 'append-rate');
      if (rate === 0) throw new UsageError('--append-rate must be at least 1.');
      await serveHttp({
        store: storeOptions(ctx),
        keys: ctx.keys,
        host: stringOption(ctx, 'host') ?? DEFAULT_HOST,
        port: numberOption(ctx, 'port') ?? DEFAULT_PORT,
        bodyCap: numberOption(ctx, 'body-cap'),
        recordCap: numberOption(ctx, 'record-cap'),
        allowedOrigins: ctx.values['allow-origin'] as string[] | undefined,
        limits: rate === undefined ? undefined : { appendsPerSecond: rate, appendBurst: rate * 2 },
        log: ctx.log,
        stderr: ctx.stderr,
        exitWithParent: ctx.values['exit-with-parent'] === true,
        command: invokedAs(undefined, ctx.env),
        checkpoints: checkpointsFor(ctx),
        // Each append is signed for the primary as the agent that signed it here.
        forward: await forwarding(ctx),
      });
      return 0;
    }
    for (const name of ['host', 'port', 'body-cap', 'allow-origin', 'append-rate', 'exit-with-parent', ...Object.keys(CHECKPOINT_OPTIONS)]) {
      if (ctx.values[name] !== undefined) throw new UsageError(`--${name} applies to the HTTP hub; add --http.`);
    }
    const { serveStdio } = await import('../mcp/transports/stdio.js');
    const agent = agentOption(ctx);
    const channel = ctx.values.channel === true || ctx.env.P_E_RELAY_CHANNEL === '1';
    if (channel && agent === undefined) throw new UsageError('--channel pushes to a named agent; add --agent NAME.');
    const forward = await forwarding(ctx);
    if (forward && agent === undefined) throw new UsageError(
      '--forward over stdio signs each append as the agent this server serves, ' +
      'with its key: add --agent NAME (or set P_E_RELAY_AGENT), and put NAME.key in --keys.');
    const about = aboutOption(ctx, agent);
    await serveStdio({ ...storeOptions(ctx), log: ctx.log, agent, channel, forward, about });
    return 0;
  },
};

/** The hub's checkpoints: the cadence and the key that signs them, or undefined for none. */
function checkpointsFor(ctx: CommandContext): ServeHttpOptions['checkpoints'] {
  const cadence = checkpointCadence(ctx);
  return cadence === null ? undefined : { cadence, signer: hubKeySigner(ctx.keys, checkpointKeyOption(ctx), ctx.log) };
}

/** The stdio server's agent: --agent, else P_E_RELAY_AGENT, else none (an unnamed server, as before names). */
function agentOption(ctx: CommandContext): string | undefined {
  const given = stringOption(ctx, 'agent');
  const env = ctx.env.P_E_RELAY_AGENT;
  const [name, where] = given !== undefined ? [given, '--agent'] : env ? [env, 'P_E_RELAY_AGENT'] : [undefined, ''];
  if (name === undefined) return undefined;
  try {
    return checkAgentName(name, where);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The agent's about to state at start (--about), checked before anything starts. */
function aboutOption(ctx: CommandContext, agent: string | undefined): string | undefined {
  const given = stringOption(ctx, 'about');
  if (given === undefined) return undefined;
  if (agent === undefined) throw new UsageError('--about states what the agent this server serves does; add --agent NAME.');
  try {
    return checkAbout(given);
  } catch (err) {
    throw new UsageError(`--about: ${(err as Error).message}`);
  }
}

/** A replica's forwarding (serve --forward): each append signed for the primary as its agent (stdio: with its key in --keys; HTTP: the client's own request). */
async function forwarding(ctx: CommandContext): Promise<Forwarding | undefined> {
  if (ctx.values.forward !== true) return undefined;
  const url = stringOption(ctx, 'primary');
  if (url === undefined) throw new UsageError('--forward sends appends to the primary: add --primary URL, the hub as `serve --http` prints it (e.g. --primary http://hub.example:7077).');
  const { parseHubUrl } = await import('../bridge/hub-url.js');
  const primary = parseHubUrl(url);
  if (primary === null) throw new UsageError(`--primary "${url}" is not an http:// or https:// URL; with --forward give the primary hub's address, e.g. http://hub.example:7077.`);
  const { primaryAppender } = await import('../replica/primary-appender.js');
  const { keys } = ctx;
  return { primary: primary.base, forwarderFor: (store, log) => primaryAppender({ primary, keys, store, log }) };
}

function wakeOption(ctx: CommandContext): 'bells' | 'directory' {
  const wake = stringOption(ctx, 'wake') ?? 'bells';
  if (wake !== 'bells' && wake !== 'directory') throw new UsageError(`--wake takes bells or directory, not "${wake}".`);
  return wake;
}

export function storeOptions(ctx: CommandContext): StoreOptions {
  const poll = pollOption(ctx);
  return {
    corpus: ctx.corpus,
    // A replica is a mirror: it stores nothing itself (its appends go to the primary).
    readOnly: ctx.values['read-only'] === true || ctx.values.forward === true,
    strictRecipients: ctx.values['strict-recipients'] === true,
    primary: stringOption(ctx, 'primary'),
    watch: poll === undefined ? 'events' : 'poll',
    reconcileMs: poll,
    bells: wakeOption(ctx) === 'bells',
    maxRecordBytes: numberOption(ctx, 'max-record-bytes'),
    log: ctx.log,
  };
}
