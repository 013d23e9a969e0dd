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
      'Block until records matching your filters land (no filter: any new record), then return their metadata. The hub matches (AND across filters, OR within one), so records for others never wake you. It cannot wake you between turns: call it when you expect something. Read-only; over HTTP it must be signed.',
      'Always pass the last answer\'s cursor as after: it covers every record the call considered, matched or not, and moves on timeouts too, so you miss nothing and see nothing twice. With after, held matches return at once; without it, only what lands after the call starts.',
      'Recipes. Answer what is addressed to you: to: ["<you>", "all"], then append_relay with parent: <its id>. Wait for replies to your record: replies_to: <its id>. Add include_bytes to skip get_relay.',
      'Returns {appeared: [{id, kind, from, to, parent, refs, depositedBy, provenance}], timedOut, waitedMs, cursor}; the text ends "cursor: <id>". A timeout answers appeared: [] and timedOut: true: just call again. Clients often give up after 60 s: send a progressToken (progress every 10 s) or keep timeout_ms below your limit.',
    ].join('\n\n'),
    input: {
      after: z.string().optional().describe(`optional: the cursor of your last answer (${shape.describe}, e.g. ${shape.example}; ${shape.format(0)} for everything held). Matches after it return at once. Omit to wait only for what lands from now on`),
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
