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
 * The bridge answers from its copy of the hub's list, fetched once and
 * checked again when the hub's own ttlMs has passed, so a client that lists
 * before every call costs the hub nothing; when the check finds the hub's
 * list changed, the bridge sends notifications/tools/list_changed.
 *
 * When the hub cannot be reached at the moment a client first asks, the
 * bridge still has to answer (a client that gets no tools at start never
 * asks again), so it answers definitions built from lib/mcp/tools at the
 * default width, and after the next call the hub answers it sends
 * list_changed if the hub's list is different, so the client fetches the
 * right one.
 */
import { Client, InMemoryTransport, type Tool } from '@modelcontextprotocol/client';
import { idShape } from '../model/ids.js';
import type { Logger } from '../log.js';
import { createListingServer, LIST_CACHE } from '../mcp/server.js';
import type { HubClient } from './hub-client.js';

const LIST_TIMEOUT_MS = 5_000;

export class ToolList {
  private fromHub: Tool[] | null = null;
  /** When the hub's copy stops being fresh: its own ttlMs after it was fetched (the bridge's LIST_CACHE when it states none). */
  private freshUntil = 0;
  /** The client was last given a list that may not be the hub's. */
  private stale = false;
  private refreshing: Promise<void> | null = null;
  private fallback: Promise<Tool[]> | null = null;

  constructor(
    private readonly hub: HubClient,
    private readonly changed: () => void,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The list to answer tools/list with: the hub's copy while it is fresh,
   * with no trip to the hub; past its ttl the same copy at once, while a
   * fetch in the background checks it (and says list_changed if the hub's
   * differs). Only the first list, before any copy, waits for the hub.
   */
  async current(): Promise<Tool[]> {
    if (this.fromHub) {
      if (this.now() >= this.freshUntil) void this.refresh();
      return this.fromHub;
    }
    try {
      await this.fetch();
      return this.fromHub!;
    } catch (err) {
      this.stale = true;
      this.log.warn(`cannot fetch the tool list from the hub (${(err as Error).message}); answering the built-in definitions (four-digit ids) until it answers`);
      return this.builtIn();
    }
  }

  /** The hub's own list as last fetched (null before the first answer). */
  get hubList(): readonly Tool[] | null {
    return this.fromHub;
  }

  /** The hub just answered a call: if the client may hold a stale list, or the copy is past its ttl, check and tell it. */
  hubAnswered(): void {
    if (this.stale || this.now() >= this.freshUntil) void this.refresh();
  }

  private async fetch(): Promise<void> {
    const { tools, ttlMs } = await this.hub.listTools(LIST_TIMEOUT_MS);
    this.fromHub = tools;
    this.freshUntil = this.now() + (ttlMs ?? LIST_CACHE.ttlMs);
  }

  /** Fetches the hub's list again, once at a time, and tells the client if it differs from what it was shown. */
  private refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      const shown = this.fromHub ?? (await this.builtIn());
      try {
        await this.fetch();
      } catch {
        return; // the copy stays; the next answered call tries again
      }
      this.stale = false;
      if (JSON.stringify(this.fromHub) !== JSON.stringify(shown)) this.changed();
    })().finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  /** lib/mcp/tools' definitions at the default id width, as tools/list would show them. */
  private builtIn(): Promise<Tool[]> {
    this.fallback ??= (async () => {
      // A hub's own list states its width and record limit; this one states the defaults.
      // The hub behind the bridge is unknown here: its defaults, as a hub started without flags states them.
      const server = createListingServer({ shape: idShape() });
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
