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
      'List the held records that name one id in their parent: or ref: header: one level only, in id order, all at once (no pagination). A reply to a reply is not included; call again with the reply\'s id to go deeper, which is also why cycles cannot trap you.',
      'An empty list means no record held here names that id; it says nothing about records elsewhere. A malformed id has no replies.',
      'Reads only: it deposits nothing and needs no credential. Use it when you have one id and want what answered it; get_relay for bytes, list_relays to find ids, wait_for_relay to block for answers that have not landed yet.',
      'Returns a text line "replies to <id> (N):" followed by one line per reply, and {parent, replies: [{id, kind, from, to}]}.',
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
