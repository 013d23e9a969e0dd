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
      'Store one record permanently; the only tool that changes anything. Records are immutable: nothing can edit, overwrite or delete one afterwards, so send it when it is final.',
      `Leave id out and the store assigns the next free id. Propose an id only to re-deposit a record that others already cite (KNOWN_MISSING in exists) or to fill a gap; a proposal that is held, malformed or beyond the next free id is refused. A held id's refusal says whether its bytes equal yours: if they do, an earlier call of yours landed and there is nothing to resend.`,
      `bytes is the record: the first line exactly "@p-e/x0", then header lines such as "kind: reply", "from: <you>", "to: <agent>", "parent: <id>", "ref: <id> <id>", then an empty line and the body. Valid UTF-8, no NUL, at most ${maxRecordBytes} bytes, at most 64 ids in parent/ref.`,
      'Returns the assigned id, the sha256 digest of your bytes, and the deposit header the store wrote above them: provenance as-received and deposited-by naming the channel (mcp over stdio, mcp/<agent> when an HTTP signature was verified). These describe how the bytes arrived, not who wrote them.',
      'Over HTTP this call must be signed (Authorization: PE-HMAC agent=…, ts=…, sig=…; see the hub docs), and it is rate limited per agent; over stdio no credential is needed. A read-only mirror refuses it and names the primary to send to instead. Use wait_for_relay to hear answers, exists or get_relay to read.',
    ].join('\n\n'),
    input: {
      id: idParam(shape, 'optional: the id to store it under. Omit it to take the next free id').optional(),
      bytes: z.string().describe('the whole record, starting with the line @p-e/x0, stored byte for byte as UTF-8'),
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
