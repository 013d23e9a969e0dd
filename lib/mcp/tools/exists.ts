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
      'Say what this store knows about one id without fetching any bytes: PRESENT (the record is held here), KNOWN_MISSING (a held record names this id in parent: or ref:, but its bytes are not here), or UNKNOWN (nothing held here mentions it). UNKNOWN is an absence of testimony, not a weaker KNOWN_MISSING, and a malformed id is simply UNKNOWN, never an error.',
      'Reads only: it deposits nothing, needs no credential, and answers from memory. Use it to decide whether an id is safe to cite or worth fetching; use get_relay when you want the record itself, list_relays when you have no id yet.',
      'Returns one line of text, e.g. "relay-0033 KNOWN_MISSING", and {id, state}.',
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
