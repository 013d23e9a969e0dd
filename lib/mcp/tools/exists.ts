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
      `What this store knows about one id, without reading its bytes: PRESENT (held), KNOWN_MISSING (cited but absent) or UNKNOWN (nothing mentions it). Use it before a re-deposit. Ids are ${shape.describe} (${shape.example}), compared literally by every tool: ${shape.format(33).replace(/-0+/, '-')} or ${shape.example.toUpperCase()} is malformed. Never refuses.`,
      'PRESENT skips the digest check (get_relay may refuse it damaged).',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the id to ask about') },
    output: {
      id: z.string().describe('as given'),
      state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']).describe('PRESENT: held here; KNOWN_MISSING: a held record cites it in parent: or ref:, its bytes are not here: if yours (append_relay returned that id to you), re-deposit it with append_relay id; else ask again after your next wait_for_relay call, up to 3 times, then report it missing (if a question cites it, in your answer); UNKNOWN: nothing held here mentions it; also the answer for a malformed id, so check the id\'s shape first'),
    },
  }),
  async run(store, { id }) {
    const result = await store.exists(id);
    return { text: existsText(result.id, result.state), structured: { ...result } };
  },
});
