import { z } from 'zod';
import { repliesText } from '../../model/render.js';
import { claimFields, idParam, linkFields } from './shared.js';
import { defineTool, READ } from './tool.js';

export const listReplies = defineTool({
  name: 'list_replies',
  title: 'Records naming an id in parent: or ref:',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: [
      'List the held records naming one id in parent: or ref:, one level deep, ascending, in one answer, each with kind, from, to, parent and refs: parent equal to the id marks an answer, refs holding it a citation. Call again with a reply\'s id to go deeper.',
      'Use it to read a thread. list_relays with replies_to gives the same records as bare ids after a mark; wait_for_relay with replies_to blocks until one lands.',
      'Never refuses: empty means nothing held here names the id yet; a malformed id gets an empty list too (the replies_to filter refuses it instead).',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the record whose replies you want') },
    output: {
      parent: z.string().describe('the id asked about, exactly as given'),
      replies: z.array(z.object({ id: z.string(), ...claimFields, ...linkFields })).describe('ascending by id'),
    },
  }),
  async run(store, { id }) {
    const result = await store.replies(id);
    return { text: repliesText(result), structured: { ...result } };
  },
});
