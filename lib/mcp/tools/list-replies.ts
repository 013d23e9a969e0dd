import { z } from 'zod';
import { repliesText } from '../../doors/render.js';
import { bare, claimFields, idParam, linkFields, recordIdField } from './shared.js';
import type { IdShape } from '../../model/ids.js';
import { defineTool, READ } from './tool.js';

export const listReplies = defineTool({
  name: 'list_replies',
  title: 'Records naming an id in parent: or ref:',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape, agent }) => (agent ? named(shape) : ({
    description: [
      'List held records naming one id in parent: or ref:, one level deep (pass a reply\'s id for more), ' +
        'metadata only: replies[].parent equal to the id marks a direct reply, replies[].refs holding it a citation.',
      'Use it to read a thread or check a question for answers; for their bytes, wait_for_relay replies_to.',
      'Empty: nothing names the id yet, or it is malformed (never refused: check its shape).',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the record whose replies you want') },
    output: {
      // spec §8 fixes the name ({parent, replies}), and GET /relays/ID/replies answers the same JSON; the text tells it from replies[].parent.
      parent: z.string().describe('the id you passed'),
      // The item's fields are described once per tools/list, on wait_for_relay's appeared items (the same names, the same values).
      replies: z
        .array(replyItem())
        .describe('ascending by id, damaged records never; fields as in wait_for_relay\'s items'),
      // Receipts come wherever a recipient keeps marks, whoever asks: a field the schema left out fails a checking client.
      deliveredTo: DELIVERED_TO,
    },
  })),
  async run(store, { id }) {
    const result = await store.replies(id);
    return { text: repliesText(result), structured: { ...result } };
  },
});

/** Receipts: who of the id's named recipients has had it delivered, so an asker can tell "has it, no answer yet" apart: "has not seen it". */
const DELIVERED_TO = z.array(z.string()).optional().describe('its to: names it was delivered to (absent: to: names none)');

/** A named server's list_replies: a thread or a question's answers, one level. */
function named(shape: IdShape) {
  return {
    description: 'Held records naming one id in parent: (replies) or ref: (citations), ascending, metadata only, one level deep. To check a question for answers or read a thread.',
    input: { id: idParam(shape, 'the record') },
    output: { parent: z.string(), replies: z.array(replyItem()), deliveredTo: DELIVERED_TO },
  };
}

/**
 * One reply: the fields a wait_for_relay item always has (the store answers
 * them all; a schema without them would fail a client's validation). The
 * deposit fields are always there, but optional in the schema: "required"
 * would spend the listing's byte budget saying it again.
 */
function replyItem() {
  return z.object({ id: recordIdField, ...bare(claimFields), ...bare(linkFields), depositedBy: z.string().optional(), provenance: z.string().optional(), depositedAt: z.string().optional() });
}
