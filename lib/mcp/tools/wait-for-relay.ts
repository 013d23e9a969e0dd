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
      'Block until records matching your filters land (no filter: any record), then return them with metadata and a cursor. With after: every held match above it, at once, ascending; if none, or without after: the first matches to land. Filters combine with AND, the names in one with OR; records for others never wake you. It cannot wake you between turns: call it when you expect something.',
      'Keep one cursor per filter set: pass the cursor of your last call with the same filters as after, after a timeout too (it covers every record that call considered), never another set\'s cursor; so you miss nothing and see nothing twice. If a call gets no answer, repeat it with the same after.',
      `Serve (<you>: your from: name): first call to: ["<you>", "all"], kind: "question", include_bytes: true, after: ${shape.format(0)} (or the cursor you kept); skip items from: <you>, and backlog items list_replies shows you answered; answer each with append_relay bytes "@p-e/x0\nkind: answer\nfrom: <you>\nto: <its from>\nparent: <its id>\n\n<answer>" and a fresh idempotency_key.`,
      'Refusals are isError text saying what to do, code in _meta["p-e-relay/error"].code, as each parameter says; over HTTP, too_many_waits (over 8 open per agent).',
    ].join('\n\n'),
    input: {
      after: z.string().optional().describe(`optional: return only records above this id (exclusive): the cursor of your last call with the same filters, your own record's id, or ${shape.format(0)} for everything held; ${shape.describe}. A malformed one is refused (bad_id). A record landing below it later (a mirror's late copy, a re-deposit) is never returned to it. Omit it to wait only for what lands from now on`),
      // multipleOf(1), not int(): int() would write a maximum of 2^53-1 into the schema, which reads as a limit beside the cap.
      timeout_ms: z.number().min(0).multipleOf(1).optional().describe(`optional: how long to block, in ms; default ${DEFAULT_WAIT_MS}. Values above ${MAX_WAIT_MS} are capped to ${MAX_WAIT_MS}, not refused. 0 only looks: the held matches above after, else an immediate timeout. Many clients give up on a call after 60 s: keep it ≤ 50000 unless yours is known to wait longer`),
      ...filterParams(),
      include_bytes: z.boolean().optional().describe('optional: also return each record\'s bytes (below the deposit header) and digest, saving a get_relay per record; up to 64 KiB of record bytes per call, all items together; items past that carry bytesOmitted: true. In the text, each record\'s bytes follow its line between ">>> <id> bytes, <digest>" and "<<< <id>"'),
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
            digest: z.string().optional().describe('with include_bytes: sha256:<64 hex> of bytes'),
            bytesOmitted: z.literal(true).optional().describe('with include_bytes: not inlined (past the call\'s 64 KiB, or unreadable); fetch it with get_relay'),
          }),
        )
        .describe(`the matching records: ascending by id when after was given, else in landing order; every match found at that moment, up to ${WAIT_MAX_ITEMS.toLocaleString('en-US')} (past that the lowest ids, and cursor is the last of them: call again with it). The text opens "<N> appeared after <ms> ms:", then one line per record, "<id> (kind …, from …, to …, parent …, refs …) deposited-by <depositedBy>, <provenance>" (headers it lacks left out), and ends with the cursor line`),
      timedOut: z.boolean().describe('true when the time ran out with nothing new (the text then opens "nothing appeared in <ms> ms (timed out)"); says nothing about whether a record is still coming. False with appeared [] when the server ended the wait early, shutting down or closing the session (text "the wait ended after <ms> ms with nothing new")'),
      waitedMs: z.number().describe('how long this call waited, in ms'),
      cursor: z.string().describe(`every record up to this id was considered: the highest held (the last item, past the item cap), or just below one still being written; never below after, ${shape.format(0)} in an empty store. Pass it as after next time, with the same filters; the text's last line is "cursor: <id> (pass it as after next time)"`),
    },
  }),
  async run(store, { after, timeout_ms, to, from, kind, replies_to, include_bytes }, { signal, progress }) {
    const result = await store.wait({
      after,
      timeoutMs: timeout_ms,
      filter: parseFilter({ to, from, kind, replies_to }, store.shape),
      includeBytes: include_bytes === true,
      limit: WAIT_MAX_ITEMS,
      signal,
      onProgress: progress && ((waitedMs) => progress(waitedMs, `still waiting after ${Math.round(waitedMs / 1000)} s`)),
    });
    const answer = capped(result);
    return { text: waitText(answer), structured: { ...answer } };
  },
});

/**
 * The most items one answer carries. A catch-up from the start of a
 * million-record store would otherwise be a million items (~200 MB of JSON on
 * one line; the SDK's stdio client ends the session past 10 MiB). Past the
 * cap the answer holds the lowest ids and its cursor is the last of them, so
 * the next call (after = cursor) goes on from there: the cursor covers what
 * this call answered, and every record above it is still ahead.
 */
export const WAIT_MAX_ITEMS = 10_000;

function capped<T extends { appeared: { id: string }[]; cursor: string }>(result: T): T {
  if (result.appeared.length <= WAIT_MAX_ITEMS) return result;
  // Ids of one store have one width: string order is id order.
  const kept = [...result.appeared].sort((a, b) => (a.id < b.id ? -1 : 1)).slice(0, WAIT_MAX_ITEMS);
  return { ...result, appeared: kept, cursor: kept[kept.length - 1]!.id };
}
