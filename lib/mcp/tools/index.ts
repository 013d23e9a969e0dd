import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RelayStore } from '../../store/store.js';
import type { DoorRef } from '../door.js';
import { registerAppendRelay } from './append-relay.js';
import { registerExists } from './exists.js';
import { registerGetRelay } from './get-relay.js';
import { registerListRelays } from './list-relays.js';
import { registerListReplies } from './list-replies.js';
import { registerWaitForRelay } from './wait-for-relay.js';

export const TOOL_NAMES = ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay'] as const;

export function registerTools(server: McpServer, store: RelayStore, door: DoorRef): void {
  registerAppendRelay(server, store, door);
  registerExists(server, store);
  registerGetRelay(server, store);
  registerListRelays(server, store);
  registerListReplies(server, store);
  registerWaitForRelay(server, store, door);
}
