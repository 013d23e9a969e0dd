import { z } from 'zod';
import { repliesText } from '../../model/render.js';
import { claimFields, idParam, linkFields, recordIdField } from './shared.js';
import { defineTool, READ } from './tool.js';

export const listReplies = defineTool({
  name: 'list_replies',
  title: 'Records naming an id in parent: or ref:',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: [
      'List the held records naming one id in parent: or ref:, one level deep (call again with a reply\'s id for more), ascending, in one response, metadata only (bytes: get_relay): replies[].parent equal to the id marks a direct reply, replies[].refs holding it a citation.',
      'Use it to read a thread; answers to your questions reach your wait_for_relay loop (replies_to there is the fallback).',
      'Never refuses: empty means nothing held here names the id yet, or the id is malformed.',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the record whose replies you want', `For the replies' bytes in one call: wait_for_relay replies_to: this id, after: ${shape.format(0)}, timeout_ms: 0, include_bytes: true`) },
    output: {
      parent: z.string().describe('the id you asked about, exactly as given; not a header: each reply\'s own parent: header is its replies[].parent, equal to this id for a direct reply'),
      replies: z.array(z.object({ id: recordIdField, ...claimFields, ...linkFields })).describe('ascending by id. The text opens "replies to <id> (N):", then one line per reply, "<id> (kind …, from …, to …, parent …, refs …)", to as written, refs separated by spaces, headers it lacks left out'),
    },
  }),
  async run(store, { id }) {
    const result = await store.replies(id);
    return { text: repliesText(result), structured: { ...result } };
  },
});
