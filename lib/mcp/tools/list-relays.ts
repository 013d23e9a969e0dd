import { z } from 'zod';
import { listText } from '../../model/render.js';
import { parseFilter } from '../../model/filter.js';
import { filterParams } from './shared.js';
import { defineTool, READ } from './tool.js';

export const listRelays = defineTool({
  name: 'list_relays',
  title: 'List held and known-missing ids',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: [
      'Survey the store without blocking: held ids and KNOWN_MISSING ids (named by a held record, bytes absent), ascending, all in one answer (no pagination).',
      'Filters select held records (AND across filters, OR within one); with any filter, known missing is empty. Read-only.',
      'Use it for a one-off look or to catch up; wait_for_relay to block for new records, list_replies for one thread, exists for one id.',
      'Returns exactly two text lines, "present (N): ids" and "known missing (M): ids", and {after, present, knownMissing}.',
    ].join('\n\n'),
    input: {
      after: z.string().optional().describe(`optional: only ids greater than this one. ${shape.describe}, e.g. ${shape.example}; a malformed mark is refused rather than guessed at. Omit it for the whole store`),
      ...filterParams(shape),
    },
    output: {
      after: z.string().nullable().describe('the mark the listing starts after, or null for the whole store'),
      present: z.array(z.string()).describe('ids held here, ascending'),
      knownMissing: z.array(z.string()).describe('ids a held record names whose bytes are not here, ascending'),
    },
  }),
  async run(store, { after, to, from, kind, replies_to }) {
    const result = await store.list(after, parseFilter({ to, from, kind, replies_to }, store.shape));
    return { text: listText(result), structured: { ...result } };
  },
});
