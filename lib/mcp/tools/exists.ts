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
      `What this store knows about one id, without reading its bytes: PRESENT, KNOWN_MISSING or UNKNOWN. Ids are ${shape.describe} (${shape.example}), compared literally by every tool: ${shape.format(33).replace(/-0+/, '-')} or ${shape.example.toUpperCase()} is malformed. Never refuses. Text: one line "<id> <STATE>".`,
      'PRESENT does not re-check the digest (get_relay may refuse it damaged). To read a record, call get_relay directly: its refusal names the state.',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the id to ask about') },
    output: {
      id: z.string().describe('the id asked about, exactly as given'),
      state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']).describe('PRESENT: its file is held here; KNOWN_MISSING: a held record cites it in parent: or ref: and its bytes are not here (not copied here yet, lost, or never written): on a mirror try later; if it is your own lost record, re-deposit it with append_relay id; UNKNOWN: nothing held here mentions it; also the answer for a malformed id, so check the id\'s shape first'),
    },
  }),
  async run(store, { id }) {
    const result = await store.exists(id);
    return { text: existsText(result.id, result.state), structured: { ...result } };
  },
});
