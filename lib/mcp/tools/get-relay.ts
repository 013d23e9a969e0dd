import { idParam } from './shared.js';
import { defineTool, READ } from './tool.js';

export const getRelay = defineTool({
  name: 'get_relay',
  title: 'Fetch one record',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: `One record's exact stored file as text: its deposit header, a "---" line, then the sender's bytes.
For ids whose bytes you lack (parent:, ref:, open, list answers).
Refused not_found or damaged: report it.`,
    input: { id: idParam(shape, 'the record') },
  }),
  async run(store, { id }) {
    return { text: (await store.read(id)).toString('utf8') };
  },
});
