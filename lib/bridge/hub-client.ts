/**
 * The bridge's side of the hub: one SDK Client (the v2 SDK) over Streamable
 * HTTP, made on first use. It negotiates in `auto` mode: `server/discover`
 * first, and 2026-07-28 when the hub speaks it; a hub that refuses the probe
 * (a 1.x hub answers 400) gets the 2025 `initialize` handshake instead. The
 * hub is stateless (no session), so one negotiation serves every later call,
 * a hub restart between calls costs nothing, and a failed one (hub down at
 * start) is simply tried again on the next call.
 *
 * Every request runs inside a CallScope (hub-fetch.ts), and whatever fails
 * comes out of here as either a RelayError (the hub refused over HTTP, could
 * not be reached, or did not answer in time) or an McpError the hub itself
 * answered (an unknown tool, arguments its schema refuses), which belongs to
 * the protocol and is passed on as such (a ProtocolError).
 */
import { Client, ProtocolError, SdkError, SdkErrorCode, StreamableHTTPClientTransport, type Tool } from '@modelcontextprotocol/client';
import { RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { VERSION } from '../version.js';
import { hubTimeout, streamBroken, type HubSide } from './hub-answers.js';
import { callScope, type CallScope } from './hub-fetch.js';
import type { HubUrl } from './hub-url.js';

const HANDSHAKE_TIMEOUT_MS = 10_000;
/** How long after a call's event stream ends its answer may still be on its way through the SDK. */
const STREAM_GRACE_MS = 1_000;

export class HubClient {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;

  constructor(
    private readonly hub: HubUrl,
    private readonly fetch: typeof globalThis.fetch,
    private readonly side: HubSide,
    private readonly log: Logger,
  ) {}

  /**
   * Runs `use` with the connected client inside `scope`, turning failures
   * into RelayErrors (or the hub's own McpErrors). `timeoutMs` is the SDK
   * timeout the call was given, for the sentence when it runs out.
   */
  async run<T>(scope: CallScope, timeoutMs: number, use: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.connected();
    // Ends the call's HTTP request when the call fails for any reason (an SDK
    // timeout only stops listening; the hub would go on holding the wait).
    const local = new AbortController();
    const inner: CallScope = { ...scope, signal: scope.signal ? AbortSignal.any([scope.signal, local.signal]) : local.signal };
    let settled = false;
    // A call answered as an event stream is answered on that stream; if the
    // stream ends without the answer (the hub restarted mid-wait), the SDK
    // would only notice at its timeout, a minute or more later.
    const broken = new Promise<never>((_, reject) => {
      inner.onStreamEnd = () =>
        setTimeout(() => {
          if (settled) return;
          inner.failure ??= streamBroken(this.side);
          reject(inner.failure);
        }, STREAM_GRACE_MS).unref();
    });
    broken.catch(() => {});
    try {
      return await Promise.race([callScope.run(inner, () => use(client)), broken]);
    } catch (err) {
      local.abort();
      throw this.explain(err, inner, timeoutMs);
    } finally {
      settled = true;
    }
  }

  /** The hub's tools, and how long the hub says they stay valid (2026-07-28 ttlMs; undefined from a 2025 hub). */
  async listTools(timeoutMs: number): Promise<{ tools: Tool[]; ttlMs?: number }> {
    return this.run({}, timeoutMs, async (client) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      let ttlMs: number | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
        tools.push(...page.tools);
        const ttl = (page as { ttlMs?: unknown }).ttlMs;
        if (typeof ttl === 'number') ttlMs = Math.min(ttlMs ?? ttl, ttl);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return { tools, ttlMs };
    });
  }

  /** The protocol version the hub and the bridge agreed on, once connected. */
  async negotiated(timeoutMs: number): Promise<string | undefined> {
    return this.run({}, timeoutMs, async (client) => client.getNegotiatedProtocolVersion());
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.close().catch(() => {});
  }

  private connected(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    const client = new Client({ name: 'p-e-relay-bridge', version: VERSION }, { versionNegotiation: { mode: 'auto' } });
    client.onerror = (err) => this.log.debug(`hub transport: ${err.message}`);
    const transport = new StreamableHTTPClientTransport(this.hub.mcp, { fetch: this.fetch });
    const scope: CallScope = {};
    try {
      await callScope.run(scope, () => client.connect(transport, { timeout: HANDSHAKE_TIMEOUT_MS }));
    } catch (err) {
      await client.close().catch(() => {});
      throw this.explain(err, scope, HANDSHAKE_TIMEOUT_MS);
    }
    this.log.debug(`connected to the hub at ${this.hub.mcp.href} (MCP ${client.getNegotiatedProtocolVersion()})`);
    this.client = client;
    return client;
  }

  private explain(err: unknown, scope: CallScope, timeoutMs: number): Error {
    if (scope.failure) return scope.failure;
    if (err instanceof RelayError) return err;
    if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) return hubTimeout(this.side, timeoutMs);
    if (err instanceof ProtocolError) return err;
    this.log.debug(`unexpected failure talking to the hub: ${(err as Error)?.message ?? String(err)}`);
    return new RelayError(
      'hub_error',
      `The bridge could not make sense of the hub's answer (${(err as Error)?.message ?? String(err)}), ` +
        `so the call's outcome is unknown. Check that ${this.side.url} is a p-e-relay hub; after an append, ` +
        `look (list_relays) before sending it again.`,
    );
  }
}
