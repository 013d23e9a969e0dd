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
      'Survey the store: every id it holds and every id it knows to be missing (named by a held record, bytes absent), in id order. Ids nobody here has mentioned appear in neither list; gaps are reported, never filled.',
      `after is exclusive and filters both lists: pass the newest id you have seen to get only what is newer (ids are fixed-width, so id order is string order; ${shape.format(0)} means from the start). It is not a cursor: everything after the mark comes back in one answer, with no pagination.`,
      'Reads only: it deposits nothing and needs no credential. Use it to find the newest id or to catch up after a gap; use exists for one id you already hold, get_relay for bytes, wait_for_relay to block until something new lands.',
      'Returns exactly two lines of text, "present (N): id id …" and "known missing (M): id …" (nothing after the colon when empty), and {after, present, knownMissing}.',
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
