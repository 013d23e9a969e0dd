/**
 * The stdio door: one server process per agent, spawned by the agent's MCP
 * client, sharing the corpus with every other process. stdout belongs to the
 * protocol; everything else goes to stderr.
 *
 * Both protocol eras, through the v2 SDK's `serveStdio`: a client that opens
 * with `initialize` gets a 2025-era session; one that opens with
 * `server/discover` or a request carrying the 2026-07-28 `_meta` envelope
 * gets the modern era. The first message picks, per process.
 *
 * Nothing costly happens before a call needs the index: tools/list is
 * answered from the store's settings alone, and the first call that needs the
 * index opens the store (loads the snapshot, checks it against the disk).
 * Some clients spawn a server only to probe it and then spawn the real one
 * (the v2 SDK's client in `auto` mode does); the probe then costs node's
 * start and nothing more.
 *
 * The session ends when stdin ends (the client is done or gone). Calls in
 * flight are still answered (a script may pipe requests in and close its
 * end), except that a blocked wait_for_relay ends at once with what it has:
 * nothing else will arrive to wake it for a client that has left. The SDK's
 * own stdio transport closes at end of input and drops those answers, so
 * this door reads and writes the pipes itself (draining-stdio.ts).
 *
 * A server that cannot start (no corpus where --corpus points) still speaks
 * the protocol long enough to say so: the client's first request is answered
 * with the refusal, then the process exits.
 */
import { serveStdio as sdkServeStdio } from '@modelcontextprotocol/server/stdio';
import { asRelayError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../../model/record.js';
import { RelayStore, type StoreOptions } from '../../store/store.js';
import { Door, type Forwarder, type Forwarding } from '../../doors/door.js';
import { stateAbout } from '../../store/state-about.js';
import { attachChannelPush } from '../channel/attach.js';
import { createMcpServer } from '../server.js';
import { DrainingStdio, maxLineBytes } from './draining-stdio.js';

/** How long answers to calls in flight may take after stdin ends (an append is milliseconds). */
const DRAIN_MS = 10_000;
/** JSON-RPC error code for a server that cannot serve at all (the implementation-defined server-error range). */
const CANNOT_START = -32000;

export interface StdioOptions extends StoreOptions {
  log: Logger;
  /** The agent this server serves (serve --agent, spec §8d); absent: an unnamed server, as before names. */
  agent?: string;
  /** Push what is addressed to the agent into the session (serve --channel; lib/mcp/channel/attach.ts says when it runs). */
  channel?: boolean;
  /** A replica (serve --forward): appends go to the primary, signed as the agent with its key. */
  forward?: Forwarding;
  /** With agent: its about, stated at start unless it is the agent's about already (serve --about). */
  about?: string;
}

export async function serveStdio(options: StdioOptions): Promise<void> {
  const { log } = options;
  const transport = new DrainingStdio(process.stdin, process.stdout, maxLineBytes(options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES));
  let store: RelayStore;
  try {
    store = await RelayStore.prepare(options);
  } catch (err) {
    await answerRefusal(transport, err);
    throw err; // the CLI writes the sentence to stderr too, and exits 1
  }
  // On the roster from its start, so a peer addressing this agent before its first call is not told it is unknown; and
  // known from its start, so a broadcast that lands before its first call reaches it (spec §8d). That opens the store
  // (a scan) beside the session, as its first call would.
  if (options.agent !== undefined) {
    const named = options.agent;
    await store.agents.roster.seen(named, 'served');
    void store.ready.then(() => store.agents.known(named, store.head), () => {}); // a store that cannot open says so to the first call
  }
  const ending = new AbortController();
  // No hub: nothing is signed or spent. A wait ends with the session, since nothing will wake it once the client has left.
  // A named server's name is stated by its operator, not verified: deposited-by stays `mcp`, and the record says `agent: NAME`.
  const replica = options.forward?.forwarderFor(store, log) ?? null;
  const door = new Door({ channel: 'mcp', agent: options.agent ?? null, stated: true, closed: ending.signal, forwardAppends: replica?.append });
  // Beside the session, not before it: stating it opens the store (a scan), which tools/list must not wait for.
  const stating = options.agent !== undefined && options.about !== undefined ? stateAboutAtStart(store, options.agent, options.about, replica?.append, log) : null;
  // One server per connection (two when a client probes with server/discover and falls back to initialize), all on the one store.
  // A line that is not JSON-RPC, or too long to be one of ours, is refused; without onerror the operator would never learn why a session ended.
  const { agent } = options;
  const caller = agent === undefined ? {} : { agent, channel: true, push: options.channel === true };
  const stops: (() => void)[] = [];
  const serve = () => {
    const server = createMcpServer(store, { current: door }, caller);
    if (agent !== undefined) stops.push(attachChannelPush(server, { store, agent, forced: options.channel === true, log }));
    return server;
  };
  const handle = sdkServeStdio(serve, { transport, onerror: (err) => log.warn(`stdio: ${err.message}`) });

  await new Promise<void>((resolve) => {
    transport.onended = resolve;
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  ending.abort();
  for (const stop of stops) stop();
  await transport.drained(DRAIN_MS);
  await stating;
  await handle.close().catch(() => {});
  // Answers not yet proved by a next call stay undelivered (spec §8d): the next server gives them again.
  await replica?.close();
  await store.close();
}

/** serve --about: a failure (a mirror that cannot append, a full disk) is said on stderr; the server serves all the same. */
async function stateAboutAtStart(store: RelayStore, agent: string, about: string, append: Forwarder['append'] | undefined, log: Logger): Promise<void> {
  try {
    const { id, stored } = await stateAbout({ store, depositedBy: 'mcp', append }, agent, about);
    log.info(stored ? `stored ${agent}'s about as ${id}` : `${agent}'s about is that line already (${id})`);
  } catch (err) {
    log.warn(`cannot state ${agent}'s about: ${(err as Error).message}`);
  }
}

/**
 * Answers the first request with why this server cannot serve, then gives up:
 * a client that only shows protocol errors would otherwise see "Connection
 * closed" and nothing else (the sentence reaches stderr alone).
 */
async function answerRefusal(transport: DrainingStdio, err: unknown): Promise<void> {
  const refusal = asRelayError(err);
  await new Promise<void>((resolve) => {
    transport.onended = resolve;
    setTimeout(resolve, DRAIN_MS).unref(); // a client that never asks is not waited for
    transport.onmessage = (message) => {
      if (!('method' in message) || !('id' in message)) return;
      void transport
        .send({ jsonrpc: '2.0', id: message.id, error: { code: CANNOT_START, message: refusal.message, data: { code: refusal.code } } })
        .finally(resolve);
    };
    void transport.start();
  });
  await transport.close();
}
