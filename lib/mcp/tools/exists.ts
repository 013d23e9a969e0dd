import { z } from 'zod';
import { existsText } from '../../doors/render.js';
import { idParam } from './shared.js';
import { defineTool, READ } from './tool.js';

export const exists = defineTool({
  name: 'exists',
  title: 'State of an id',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  // spec §3: a malformed id is UNKNOWN here, never refused.
  contract: ({ shape }) => ({
    description: `What the store knows of one id, without its bytes: PRESENT (held), KNOWN_MISSING (cited, bytes absent) or UNKNOWN (never mentioned, or malformed).`,
    input: { id: idParam(shape, 'the id') },
    output: { id: z.string(), state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']) },
  }),
  async run(store, { id }) {
    const result = await store.exists(id);
    return { text: existsText(result.id, result.state), structured: { ...result } };
  },
});
