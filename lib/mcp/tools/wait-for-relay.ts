import { z } from 'zod';
import { waitText } from '../../model/render.js';
import { clampWait, DEFAULT_WAIT_MS, MAX_WAIT_MS } from '../../store/waiters.js';
import { parseFilter } from '../../model/filter.js';
import { claimFields, depositedAtField, depositedByField, filterParams, linkFields, provenanceField, recordIdField } from './shared.js';
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
      'Block until records matching your filters land (no filter: any record), then return their metadata and a cursor. With after: every held match above it, at once, ascending; if none, or without after: the first matches to land (records landing together return together). Filters combine with AND, the names in one with OR; the hub matches, so records for others never wake you. It cannot wake you between turns: call it when you expect something.',
      `Recipes (<you>: your from: name). Await answers to your record <id>: replies_to and after both <id>, kind: "answer"; those with parent <id> answer it. Serve what is addressed to you: first call to: ["<you>", "all"], after: ${shape.format(0)}; answer each question with append_relay bytes "@p-e/x0\nkind: answer\nfrom: <you>\nto: <its from>\nparent: <its id>\n\n<answer>". Every next call: pass the last cursor as after, after a timeout too: it covers every record that call considered, matched or not, so with the same filters you miss nothing and see nothing twice.`,
      'Refusals are isError text saying what to do, code in _meta["p-e-relay/error"].code: bad_id (malformed after or replies_to), bad_filter (a to, from or kind with no name in it); over HTTP, too_many_waits (past 8 per agent).',
    ].join('\n\n'),
    input: {
      after: z.string().optional().describe(`optional: return only records above this id (exclusive): the last answer's cursor, your own record's id, or ${shape.format(0)} for everything held; ${shape.describe}. A malformed one is refused (bad_id). Omit it to wait only for what lands from now on`),
      // multipleOf(1), not int(): int() would write a maximum of 2^53-1 into the schema, which reads as a limit beside the cap.
      timeout_ms: z.number().min(0).multipleOf(1).optional().describe(`optional: how long to block, in ms; default ${DEFAULT_WAIT_MS}. Values above ${MAX_WAIT_MS} are capped to ${MAX_WAIT_MS}, not refused. 0 only looks: the held matches above after, else an immediate timeout. Clients often give up after 60 s: keep it ≤ 50000 unless your request carries a progressToken (progress then comes every 10 s)`),
      ...filterParams(),
      include_bytes: z.boolean().optional().describe('optional: also return each record\'s bytes (below the deposit header) and digest, saving a get_relay per record; up to 64 KiB of bytes per answer, items past that carry bytesOmitted: true. In the text, each record\'s bytes follow its line between ">>> <id> bytes, <digest>" and "<<< <id>"'),
    },
    output: {
      appeared: z
        .array(
          z.object({
            id: recordIdField,
            ...claimFields,
            ...linkFields,
            depositedBy: depositedByField,
            provenance: provenanceField,
            depositedAt: depositedAtField,
            bytes: z.string().optional().describe('with include_bytes: the record as its sender sent it'),
            digest: z.string().optional().describe('with include_bytes: sha256:<hex> of bytes'),
            bytesOmitted: z.literal(true).optional().describe('with include_bytes: not inlined (over the answer\'s 64 KiB, or unreadable); fetch it with get_relay'),
          }),
        )
        .describe('the matching records: ascending by id when after was given, else in landing order. The text answer opens "<N> appeared after <ms> ms:", then one line per record, "<id> (kind …, from …, to …, parent …, refs …) deposited-by <depositedBy>, <provenance>" (headers it lacks left out), and ends with the cursor line'),
      timedOut: z.boolean().describe('true when the time ran out with nothing new (the text then opens "nothing appeared in <ms> ms (timed out)"); says nothing about whether a record is still coming. False with appeared [] when the server ended the wait early, shutting down or closing the session (text "the wait ended after <ms> ms with nothing new")'),
      waitedMs: z.number().describe('how long this call waited, in ms'),
      cursor: z.string().describe('pass it as after next time; the text\'s last line is "cursor: <id> (pass it as after next time)"'),
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
