import { z } from 'zod';
import { repliesText } from '../../doors/render.js';
import { claimFields, idParam, linkFields, recordIdField } from './shared.js';
import { defineTool, READ } from './tool.js';

export const listReplies = defineTool({
  name: 'list_replies',
  title: 'Replies to a record',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: `Held records naming one id in parent: (replies) or ref: (citations), ascending, metadata only, one level deep.
To check a question for answers or read a thread.`,
    input: { id: idParam(shape, 'the record') },
    // Receipts come wherever a recipient keeps marks, whoever asks: a field the schema left out fails a checking client.
    output: { parent: z.string(), replies: z.array(replyItem()), deliveredTo: DELIVERED_TO },
  }),
  async run(store, { id }) {
    const result = await store.replies(id);
    return { text: repliesText(result), structured: { ...result } };
  },
});

/** Receipts: who of the id's named recipients has had it delivered, so an asker can tell "has it, no answer yet" apart: "has not seen it". */
const DELIVERED_TO = z.array(z.string()).optional().describe('its to: names it reached');

/**
 * One reply: the fields a wait_for_relay item always has (the store answers
 * them all; a schema without them would fail a client's validation). The
 * deposit fields are always there, but optional in the schema: "required"
 * would spend the listing's byte budget saying it again.
 */
function replyItem() {
  return z.object({ id: recordIdField, ...claimFields, ...linkFields, depositedBy: z.string().optional(), provenance: z.string().optional(), depositedAt: z.string().optional() });
}
