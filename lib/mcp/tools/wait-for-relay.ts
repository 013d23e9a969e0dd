import { z } from 'zod';
import { waitText } from '../../model/render.js';
import { clampWait, DEFAULT_WAIT_MS, MAX_WAIT_MS } from '../../store/waiters.js';
import { parseFilter } from '../../model/filter.js';
import { claimFields, filterParams } from './shared.js';
import { defineTool } from './tool.js';

export const waitForRelay = defineTool({
  name: 'wait_for_relay',
  title: 'Wait for new records',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  // It holds a connection open: signed over HTTP, a wait slot while it blocks,
  // progress while it waits, and the hub answers within its clamped window.
  door: {
    signed: true,
    spends: 'wait',
    progress: true,
    holdsMs: (args) => clampWait(typeof args?.timeout_ms === 'number' ? args.timeout_ms : undefined),
  },
  contract: ({ shape }) => ({
    description: [
      'Block until new records land, then return their metadata (id, kind, from, to, deposited-by, provenance); fetch bytes with get_relay. This lets one turn carry a whole exchange: you receive an answer as it lands instead of at your next turn. It does not wake you later: you must be running and calling it.',
      `With after (the newest id you have seen), it returns at once with every held record whose id sorts after it, or blocks until one lands. Without after, it waits for any record that lands after the call begins, including a mirror's late fill-in of an older id, which an after mark cannot see.`,
      `timeout_ms defaults to ${DEFAULT_WAIT_MS} and is capped at ${MAX_WAIT_MS}; when it runs out the answer is {appeared: [], timedOut: true}. Many clients give up on a request after 60 s: send a progressToken in the request's _meta (and let progress reset your client's timeout) and the server sends a progress notification every 10 s while it waits.`,
      'Reads only: it deposits nothing. Over HTTP it must be signed like append_relay, because it holds a connection open; over stdio no credential is needed. Use list_relays for a one-off look without blocking.',
    ].join('\n\n'),
    input: {
      after: z.string().optional().describe(`optional: the newest id you have seen; ${shape.describe}, e.g. ${shape.example}, or ${shape.format(0)} for the start. Records after it return at once. Omit to wait only for what lands from now on`),
      timeout_ms: z.number().int().min(0).optional().describe(`optional: how long to wait, in ms; default ${DEFAULT_WAIT_MS}, values above ${MAX_WAIT_MS} are capped`),
      ...filterParams(shape),
      include_bytes: z.boolean().optional().describe('optional: also return each record\'s bytes (below the deposit header) and digest, up to 64 KiB per answer; items past that have bytesOmitted: true'),
    },
    output: {
      appeared: z
        .array(
          z.object({
            id: z.string(),
            ...claimFields,
            parent: z.string().nullable().describe('the id in its parent:, or null'),
            refs: z.array(z.string()).describe('the other ids in its ref:'),
            depositedBy: z.string(),
            provenance: z.enum(['as-received', 'authored']),
            bytes: z.string().optional().describe('with include_bytes: the record as sent'),
            digest: z.string().optional().describe('with include_bytes: sha256:<hex> of bytes'),
            bytesOmitted: z.literal(true).optional().describe('with include_bytes: over the 64 KiB budget; use get_relay'),
          }),
        )
        .describe('metadata of the records that landed, in the order described above; fetch bytes with get_relay'),
      timedOut: z.boolean().describe('true when the window closed with nothing new; says nothing about whether a record is still coming'),
      waitedMs: z.number().describe('how long this call actually waited, in ms'),
      cursor: z.string().describe('pass as after next time: covers every record this call considered, matching or not'),
    },
  }),
  async run(store, { after, timeout_ms, to, from, kind, replies_to, include_bytes }, { signal, progress }) {
    const result = await store.wait({
      after,
      timeoutMs: timeout_ms,
      filter: parseFilter({ to, from, kind, replies_to }, store.shape),
      includeBytes: include_bytes === true,
      signal,
      onProgress: progress && ((waitedMs) => progress(waitedMs, `still waiting after ${Math.round(waitedMs / 1000)} s`)),
    });
    return { text: waitText(result), structured: { ...result } };
  },
});
