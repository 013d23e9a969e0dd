import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { existsText } from '../../model/render.js';
import type { RelayStore } from '../../store/store.js';
import { answer, guarded } from '../result.js';
import { idParam } from './shared.js';

export const EXISTS = 'exists';

export function registerExists(server: McpServer, store: RelayStore): void {
  server.registerTool(
    EXISTS,
    {
      title: 'What this store knows about an id',
      description: [
        'Say what this store knows about one id without fetching any bytes: PRESENT (the record is held here), KNOWN_MISSING (a held record names this id in parent: or ref:, but its bytes are not here), or UNKNOWN (nothing held here mentions it). UNKNOWN is an absence of testimony, not a weaker KNOWN_MISSING, and a malformed id is simply UNKNOWN, never an error.',
        'Reads only: it deposits nothing, needs no credential, and answers from memory. Use it to decide whether an id is safe to cite or worth fetching; use get_relay when you want the record itself, list_relays when you have no id yet.',
        'Returns one line of text, e.g. "relay-0033 KNOWN_MISSING", and {id, state}.',
      ].join('\n\n'),
      inputSchema: { id: idParam(store.shape, 'the id to ask about') },
      outputSchema: {
        id: z.string().describe('the id asked about, exactly as given'),
        state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']).describe('PRESENT: held; KNOWN_MISSING: named by a held record, bytes absent; UNKNOWN: nothing here mentions it'),
      },
      annotations: { title: 'What this store knows about an id', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }) =>
      guarded(async () => {
        const result = await store.exists(id);
        return answer(existsText(result.id, result.state), { ...result });
      }),
  );
}
