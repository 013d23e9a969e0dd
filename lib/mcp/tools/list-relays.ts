import { z } from 'zod';
import { listText } from '../../model/render.js';
import { parseFilter } from '../../model/filter.js';
import { listFilterParams } from './shared.js';
import { defineTool, READ } from './tool.js';

export const listRelays = defineTool({
  name: 'list_relays',
  title: 'List held and known-missing ids',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: [
      `Survey the store without blocking: held ids and KNOWN_MISSING ids (cited by a held record, bytes not here), ascending, ids only, in one answer (no pagination; at most ${shape.max} ids). Text: exactly two lines, "present (N): <ids>" and "known missing (M): <ids>".`,
      `Use it to see what is held or missing: which ids to fetch or re-deposit. To catch up with metadata (kind, from, to) and a cursor, use wait_for_relay with after: ${shape.format(0)}; list_replies for one thread, exists for one id.`,
      'Filters (as on wait_for_relay) select held records; any filter empties knownMissing: a missing id has no headers to match.',
    ].join('\n\n'),
    input: {
      after: z.string().optional().describe(`optional: only ids after this one (exclusive): any id of the shape, held or not, or ${shape.format(0)} for the start; ${shape.describe}. A malformed one is refused (bad_id): it has no place in id order. Omit it for the whole store`),
      ...listFilterParams(shape),
    },
    output: {
      after: z.string().nullable().describe('the after given, or null'),
      present: z.array(z.string()).describe('held ids, ascending'),
      knownMissing: z.array(z.string()).describe('KNOWN_MISSING ids, ascending'),
    },
  }),
  async run(store, { after, to, from, kind, replies_to }) {
    const result = await store.list(after, parseFilter({ to, from, kind, replies_to }, store.shape));
    return { text: listText(result), structured: { ...result } };
  },
});
