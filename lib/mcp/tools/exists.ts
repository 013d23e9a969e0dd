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
      // SPEC §3: a malformed id is UNKNOWN here, said beside the shape (it sat only in the output, while the text said "Never refuses").
      `What this store knows about one id, without reading its bytes: PRESENT (held), KNOWN_MISSING (cited but absent) or UNKNOWN (nothing mentions it). Use it before a re-deposit. Ids are ${shape.describe} (${shape.example}), compared literally by every tool: ${shape.format(33).replace(/-0+/, '-')} or ${shape.example.toUpperCase()} is malformed, so UNKNOWN here. Never refuses.`,
    ].join('\n\n'),
    input: { id: idParam(shape, 'the id to ask about') },
    output: {
      id: z.string().describe('as given'),
      // The one re-deposit recipe (append_relay's id and get_relay point here): decided by whether the agent holds the bytes, which it can check after a context loss.
      // A re-deposit fills an id below every peer's cursor, so waits never return it: the copy without id is what they see (and takes its own "<you>/q/<n>", as idempotency_key says).
      state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']).describe('PRESENT: held here (digest unchecked: get_relay may refuse it damaged); KNOWN_MISSING: a held record cites it in parent: or ref:, its bytes are not here. If you hold its bytes (you appended it): re-deposit them (append_relay id: it); waits past it never return it, so if peers must see it, also append them without id, with ref: <it> (answers may then name either id). Else ask again after your next wait_for_relay call, up to 3 times, then report it missing (if a question cites it, in your answer); UNKNOWN: nothing held here mentions it'),
    },
  }),
  async run(store, { id }) {
    const result = await store.exists(id);
    return { text: existsText(result.id, result.state), structured: { ...result } };
  },
});
