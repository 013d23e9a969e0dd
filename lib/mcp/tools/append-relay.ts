import { z } from 'zod';
import { encodeRecordText } from '../../model/record.js';
import { appendText } from '../../model/render.js';
import { idParam } from './shared.js';
import { defineTool } from './tool.js';

export const appendRelay = defineTool({
  name: 'append_relay',
  title: 'Append a relay record',
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  // The one call that changes anything: signed over HTTP, and one append from its agent's rate.
  door: { signed: true, spends: 'append', progress: false },
  contract: ({ shape, maxRecordBytes }) => ({
    description: [
      'Store one record permanently and return its id once it is durable: the only tool that writes. Records are immutable (never edited or deleted) and every agent of the hub can read them, so send final text.',
      'To ask, set to: to the peer and kind: question; to answer, set to: to the asker, kind: answer and parent: to the question\'s id. Then wait_for_relay for the reply.',
      'Returns {id, digest, depositedBy, provenance, depositedAt}: the deposit header the store wrote above your bytes (how they arrived, not who wrote them). Leave id out to take the next free one. Retrying after a lost answer? Resend with the same idempotency_key: you get the first record back, never a second.',
      'Over HTTP it must be signed and is rate limited; a read-only mirror refuses it and names the primary.',
    ].join('\n\n'),
    input: {
      id: idParam(shape, 'optional: only to re-deposit a KNOWN_MISSING id or fill a gap; a held, malformed or too-far-ahead id is refused. Omit it for the next free id').optional(),
      bytes: z.string().describe(`the whole record, stored byte for byte: the first line exactly @p-e/x0, header lines (kind:, from: <you>, to: <names, comma- or space-separated>, parent: <id>, ref: <ids>), an empty line, the body. UTF-8 without NUL, at most ${maxRecordBytes} bytes, at most 64 ids in parent:/ref:`),
      idempotency_key: z.string().optional().describe('optional: a fresh random key (1-200 printable ASCII) per record; a retry with it returns the first record (replayed: true), never a second'),
    },
    output: {
      id: z.string().describe('the id the record was stored under'),
      digest: z.string().describe('sha256:<hex> of your bytes, as written in the deposit header'),
      depositedBy: z.string().describe('the channel the bytes came through: mcp, mcp/<agent>, http/<agent> or cli/<user>'),
      provenance: z.enum(['as-received', 'authored']).describe('as-received for everything sent through a channel'),
      depositedAt: z.string().describe('when the store wrote it, ISO 8601 UTC'),
      replayed: z.literal(true).optional().describe('present when an earlier call with this idempotency_key stored it'),
    },
  }),
  async run(store, { id, bytes, idempotency_key }, { grant }) {
    const result = await store.append(encodeRecordText(bytes), { id, depositedBy: grant.depositedBy, idempotencyKey: idempotency_key });
    if (!result.replayed) grant.stored();
    return { text: appendText(result), structured: { ...result } };
  },
});
