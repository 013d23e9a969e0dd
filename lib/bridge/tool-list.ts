/**
 * The tools the bridge offers: the hub's own list, fetched with tools/list.
 *
 * Why the hub's list and not lib/mcp/tools built here: a store's id width is
 * fixed when it is created (init --id-width N), and every description and
 * input schema states it ("relay- and 6 digits, e.g. relay-000042"). Only
 * the hub knows its width; definitions built locally would tell the agent
 * to send four-digit ids to a six-digit hub, and every id it formed would be
 * refused or UNKNOWN. Fetching also keeps the bridge right when the hub is a
 * newer version with reworded descriptions.
 *
 * When the hub cannot be reached at the moment a client asks, the bridge
 * still has to answer (a client that gets no tools at start never asks
 * again), so it answers the hub's last list, or else definitions built from
 * lib/mcp/tools at the default width and record limit, and after the next
 * call the hub answers it sends notifications/tools/list_changed if the
 * hub's list is different, so the client fetches the right one.
 */
import { Client, InMemoryTransport, type Tool } from '@modelcontextprotocol/client';
import { idShape } from '../model/ids.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../model/record.js';
import { DEFAULT_RECORD_CAP } from '../doors/door.js';
import type { Logger } from '../log.js';
import { createListingServer } from '../mcp/server.js';
import type { HubClient } from './hub-client.js';

const LIST_TIMEOUT_MS = 5_000;

export class ToolList {
  private fromHub: Tool[] | null = null;
  /** The client was last given a list that may not be the hub's. */
  private stale = false;
  private fallback: Promise<Tool[]> | null = null;

  constructor(
    private readonly hub: HubClient,
    private readonly changed: () => void,
    private readonly log: Logger,
  ) {}

  async current(): Promise<Tool[]> {
    try {
      this.fromHub = await this.hub.listTools(LIST_TIMEOUT_MS);
      this.stale = false;
      return this.fromHub;
    } catch (err) {
      this.stale = true;
      this.log.warn(`cannot fetch the tool list from the hub (${(err as Error).message}); answering ${this.fromHub ? 'its last list' : 'the built-in definitions (four-digit ids)'} until it answers`);
      return this.fromHub ?? (await this.builtIn());
    }
  }

  /** The hub's own list as last fetched (null before the first answer). */
  get hubList(): readonly Tool[] | null {
    return this.fromHub;
  }

  /** The hub just answered a call: if the client may hold a stale list, check and tell it. */
  hubAnswered(): void {
    if (!this.stale) return;
    this.stale = false;
    const before = this.fromHub;
    void (async () => {
      const shown = before ?? (await this.builtIn());
      const now = await this.hub.listTools(LIST_TIMEOUT_MS);
      this.fromHub = now;
      if (JSON.stringify(now) !== JSON.stringify(shown)) this.changed();
    })().catch(() => {
      this.stale = true;
    });
  }

  /** lib/mcp/tools' definitions at the default id width, as tools/list would show them. */
  private builtIn(): Promise<Tool[]> {
    this.fallback ??= (async () => {
      // A hub's own list states its width and record limit; this one states the defaults.
      // The hub behind the bridge is unknown here: its defaults, as a hub started without flags states them.
      const server = createListingServer({ shape: idShape(), maxRecordBytes: DEFAULT_MAX_RECORD_BYTES, requestCap: DEFAULT_RECORD_CAP });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const client = new Client({ name: 'p-e-relay-bridge', version: '0' });
      // The server and client packages each bundle the SDK's core; a transport is a plain interface to both.
      await server.connect(serverSide as never);
      await client.connect(clientSide);
      const { tools } = await client.listTools();
      await client.close();
      await server.close();
      return tools;
    })();
    return this.fallback;
  }
}
