/**
 * The HTTP hub (`serve --http`): one node:http server for the MCP endpoint,
 * REST, the SSE stream, health and metrics, all over one store. Starting it
 * is three jobs, each in its own place: the parts every route shares (keys,
 * the signature guard, the gate, the counters: `openParts` below), the
 * server that listens (listener.ts), and each request's way to its route
 * (dispatch.ts).
 */
import { silentLogger, type Logger } from '../log.js';
import type { Forwarding } from '../doors/door.js';
import type { RelayStore } from '../store/store.js';
import { KeyRing } from '../auth/key-ring.js';
import { listRecordNames } from '../disk/record-names.js';
import { AGENT_NAME_SHAPE, BROADCAST } from '../model/agent-name.js';
import { readOnlyRefusal } from '../store/store.js';
import { ReplayGuard } from '../auth/replay-guard.js';
import { bodyCapFor, DEFAULT_RECORD_CAP } from './body.js';
import type { HubContext } from './context.js';
import { DEFAULT_HOST, DEFAULT_PORT } from './defaults.js';
import { dispatcher } from './dispatch.js';
import { HttpGate } from './gate.js';
import { DEFAULT_LIMITS, type Limits } from './limits.js';
import { Listener, type ListenerOptions } from './listener.js';
import { McpServerPool } from './mcp-server-pool.js';
import { HubMetrics } from './metrics.js';
import { rebindingGuard } from './rebinding.js';

export { DEFAULT_HOST, DEFAULT_PORT };
export { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from './listener.js';

export interface HubOptions extends ListenerOptions {
  /** A prepared store (RelayStore.prepare); the hub opens it and leaves closing it to the caller. */
  store: RelayStore;
  /** The keys directory: keys/<agent>.key. */
  keys: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** The largest request body (default: what a record of recordCap needs in JSON, body.ts). */
  bodyCap?: number;
  /** The largest record over HTTP, in its own bytes (default 65,536). */
  recordCap?: number;
  limits?: Partial<Limits>;
  /** Web origins (besides loopback ones) whose pages may call this hub. */
  allowedOrigins?: string[];
  sseKeepAliveMs?: number;
  sseMaxBufferedBytes?: number;
  log?: Logger;
  /** A replica (serve --http --forward): every append goes to the primary, signed as its agent with the key in `keys`. */
  forward?: Forwarding;
}

export interface Hub {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly context: HubContext;
  close(): Promise<void>;
}

export async function startHub(options: HubOptions): Promise<Hub> {
  const log = options.log ?? silentLogger;
  const parts = await openParts(options, log);
  const listener = new Listener(options, parts.context.metrics);
  const host = options.host ?? DEFAULT_HOST;
  const { port, address } = await listener.listen(options.port ?? DEFAULT_PORT, host).catch(async (err: unknown) => {
    // A busy port: nothing may be left holding the process open (the keys watcher is).
    await parts.keys.close();
    throw err;
  });
  listener.server.on('request', dispatcher(parts.context, rebindingGuard(host, port, options.allowedOrigins, address)));
  parts.start();
  const hostForUrl = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${hostForUrl}:${port}`,
    host,
    port,
    context: parts.context,
    close: () => listener.close(log, () => parts.stop()),
  };
}

interface Parts {
  context: HubContext;
  keys: KeyRing;
  /** Starts the signature guard's upkeep and opens the store (the hub says it is ready once the scan is done). */
  start(): void;
  /** Ends every wait and stream and the guard's upkeep, and closes the keys' watcher and a replica's connections to its primary. */
  stop(): Promise<void>;
}

/** What every route of the hub shares: its keys, signature guard, gate, counters and MCP servers. */
async function openParts(options: HubOptions, log: Logger): Promise<Parts> {
  const { store } = options;
  const keys = await KeyRing.open(options.keys, { log });
  const limits: Limits = { ...DEFAULT_LIMITS, ...options.limits };
  const holdsRecords = async () => (await listRecordNames(store.paths.corpus)).length > 0;
  const guard = new ReplayGuard(store.paths.replay, { log, perAgentPerMinute: limits.signaturesPerMinute, holdsRecords });
  const metrics = new HubMetrics();
  const recordCap = options.recordCap ?? DEFAULT_RECORD_CAP;
  // A replica's appends go to its primary; any other read-only hub refuses them.
  const replica = options.forward?.forwarderFor(store, log) ?? null;
  const gate = new HttpGate(limits, { keys, guard }, metrics, store.readOnly && !replica ? readOnlyRefusal(store.primary) : null, recordCap, replica?.append);
  keys.on('revoked', (agent) => gate.revoke(agent));
  // Every agent given a key is on the roster (spec §8d), so an append to one that has not called yet is not "unknown".
  const holders = await keys.agents();
  for (const agent of holders) await store.agents.roster.seen(agent, 'key');
  // A broadcast reaches every agent the relay knew when it landed (spec §8d): a key made while the hub runs is known from then.
  keys.on('added', (agent: string) => {
    void store.agents.roster.seen(agent, 'key');
    if (store.state === 'open') void store.agents.known(agent, store.head);
  });
  let ready = false;
  const context: HubContext = {
    store,
    gate,
    metrics,
    log,
    mcpServers: new McpServerPool(store, recordCap),
    bodyCap: options.bodyCap ?? bodyCapFor(recordCap),
    recordCap,
    sseKeepAliveMs: options.sseKeepAliveMs ?? 15_000,
    sseMaxBufferedBytes: options.sseMaxBufferedBytes ?? 1 << 20,
    ready: () => ready,
  };
  return {
    context,
    keys,
    start() {
      guard.start();
      store.open().then(
        () => {
          // The head as the store opened, read before any append waiting for the open goes on: every key here, and every
          // name on the roster, was known by then.
          const at = store.head;
          for (const agent of holders) void store.agents.known(agent, at);
          void store.agents.roster.namesAndAbouts().then(({ names }) => {
            for (const name of names) if (AGENT_NAME_SHAPE.test(name) && name !== BROADCAST) void store.agents.known(name, at);
          }, () => {});
          ready = true;
        },
        (err) => log.error(`cannot open the corpus: ${(err as Error).message}`),
      );
    },
    async stop() {
      gate.close();
      guard.stop();
      await replica?.close();
      await keys.close();
    },
  };
}
