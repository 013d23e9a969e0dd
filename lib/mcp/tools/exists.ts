import { z } from 'zod';
import { existsText } from '../../model/render.js';
import { idParam } from './shared.js';
import { defineTool, READ } from './tool.js';

export const exists = defineTool({
  name: 'exists',
  title: 'What this store knows about an id',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: [
      'Tell what this store knows about one id, without fetching bytes: PRESENT (held), KNOWN_MISSING (a held record names it in parent: or ref:, bytes absent) or UNKNOWN (nothing here mentions it; any malformed id too, never an error).',
      'Read-only, answered from memory. Use it before citing or fetching an id; get_relay for the record, list_relays when you have no id yet.',
      'Returns the line "<id> <STATE>" and {id, state}.',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the id to ask about') },
    output: {
      id: z.string().describe('the id asked about, exactly as given'),
      state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']).describe('PRESENT: held; KNOWN_MISSING: named by a held record, bytes absent; UNKNOWN: nothing here mentions it'),
    },
  }),
  async run(store, { id }) {
    const result = await store.exists(id);
    return { text: existsText(result.id, result.state), structured: { ...result } };
  },
});
