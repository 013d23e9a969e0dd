import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { repliesText } from '../../model/render.js';
import type { RelayStore } from '../../store/store.js';
import { answer, guarded } from '../result.js';
import { claimFields, idParam } from './shared.js';

export const LIST_REPLIES = 'list_replies';

export function registerListReplies(server: McpServer, store: RelayStore): void {
  server.registerTool(
    LIST_REPLIES,
    {
      title: 'Records that answer a record',
      description: [
        'List the held records that name one id in their parent: or ref: header: one level only, in id order, all at once (no pagination). A reply to a reply is not included; call again with the reply\'s id to go deeper, which is also why cycles cannot trap you.',
        'An empty list means no record held here names that id; it says nothing about records elsewhere. A malformed id has no replies.',
        'Reads only: it deposits nothing and needs no credential. Use it when you have one id and want what answered it; get_relay for bytes, list_relays to find ids, wait_for_relay to block for answers that have not landed yet.',
        'Returns a text line "replies to <id> (N):" followed by one line per reply, and {parent, replies: [{id, kind, from, to}]}.',
      ].join('\n\n'),
      inputSchema: { id: idParam(store.shape, 'the record whose replies you want') },
      outputSchema: {
        parent: z.string().describe('the id asked about, exactly as given'),
        replies: z.array(z.object({ id: z.string(), ...claimFields })).describe('held records naming it in parent: or ref:, in id order; empty is an answer'),
      },
      annotations: { title: 'Records that answer a record', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }) =>
      guarded(async () => {
        const result = await store.replies(id);
        return answer(repliesText(result), { ...result });
      }),
  );
}
