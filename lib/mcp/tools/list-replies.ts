import { z } from 'zod';
import { repliesText } from '../../model/render.js';
import { claimFields, idParam } from './shared.js';
import { defineTool, READ } from './tool.js';

export const listReplies = defineTool({
  name: 'list_replies',
  title: 'Records that answer a record',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: [
      'List the held records naming one id in parent: or ref:: one level, in id order, all at once. Call again with a reply\'s id to go deeper.',
      'Empty (also for a malformed id) means nothing held here names it yet. Read-only. To block until a reply lands, use wait_for_relay with replies_to.',
      'Returns "replies to <id> (N):" then a line per reply, and {parent, replies: [{id, kind, from, to}]}.',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the record whose replies you want') },
    output: {
      parent: z.string().describe('the id asked about, exactly as given'),
      replies: z.array(z.object({ id: z.string(), ...claimFields })).describe('held records naming it in parent: or ref:, in id order; empty is an answer'),
    },
  }),
  async run(store, { id }) {
    const result = await store.replies(id);
    return { text: repliesText(result), structured: { ...result } };
  },
});
