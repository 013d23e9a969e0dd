import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { waitText } from '../../model/render.js';
import { RelayError } from '../../errors.js';
import type { RelayStore } from '../../store/store.js';
import { DEFAULT_WAIT_MS, MAX_WAIT_MS } from '../../store/waiters.js';
import type { DoorRef } from '../door.js';
import { answer, guarded } from '../result.js';
import { claimFields } from './shared.js';

export const WAIT_FOR_RELAY = 'wait_for_relay';

export function registerWaitForRelay(server: McpServer, store: RelayStore, door: DoorRef): void {
  const { shape } = store;
  server.registerTool(
    WAIT_FOR_RELAY,
    {
      title: 'Wait for new records',
      description: [
        'Block until new records land, then return their metadata (id, kind, from, to, deposited-by, provenance); fetch bytes with get_relay. This lets one turn carry a whole exchange: you receive an answer as it lands instead of at your next turn. It does not wake you later: you must be running and calling it.',
        `With after (the newest id you have seen), it returns at once with every held record whose id sorts after it, or blocks until one lands. Without after, it waits for any record that lands after the call begins, including a mirror's late fill-in of an older id, which an after mark cannot see.`,
        `timeout_ms defaults to ${DEFAULT_WAIT_MS} and is capped at ${MAX_WAIT_MS}; when it runs out the answer is {appeared: [], timedOut: true}. Many clients give up on a request after 60 s: send a progressToken in the request's _meta (and let progress reset your client's timeout) and the server sends a progress notification every 10 s while it waits.`,
        'Reads only: it deposits nothing. Over HTTP it must be signed like append_relay, because it holds a connection open; over stdio no credential is needed. Use list_relays for a one-off look without blocking.',
      ].join('\n\n'),
      inputSchema: {
        after: z.string().optional().describe(`optional: the newest id you have seen; ${shape.describe}, e.g. ${shape.example}, or ${shape.format(0)} for the start. Records after it return at once. Omit to wait only for what lands from now on`),
        timeout_ms: z.number().int().min(0).optional().describe(`optional: how long to wait, in ms; default ${DEFAULT_WAIT_MS}, values above ${MAX_WAIT_MS} are capped`),
      },
      outputSchema: {
        appeared: z
          .array(z.object({ id: z.string(), ...claimFields, depositedBy: z.string(), provenance: z.enum(['as-received', 'authored']) }))
          .describe('metadata of the records that landed, in the order described above; fetch bytes with get_relay'),
        timedOut: z.boolean().describe('true when the window closed with nothing new; says nothing about whether a record is still coming'),
        waitedMs: z.number().describe('how long this call actually waited, in ms'),
      },
      annotations: { title: 'Wait for new records', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ after, timeout_ms }, extra) =>
      guarded(async () => {
        const grant = door.current.authorize('wait');
        try {
          const progressToken = extra._meta?.progressToken;
          const signal = grant.signal ? AbortSignal.any([extra.signal, grant.signal]) : extra.signal;
          const result = await store.wait({
            after,
            timeoutMs: timeout_ms,
            signal,
            onProgress:
              progressToken === undefined
                ? undefined
                : (waitedMs) =>
                    void extra
                      .sendNotification({ method: 'notifications/progress', params: { progressToken, progress: waitedMs, message: `still waiting after ${Math.round(waitedMs / 1000)} s` } })
                      .catch(() => {}),
          });
          // A door that ended the wait for a reason of its own (a revoked key) says so.
          if (grant.signal?.aborted && grant.signal.reason instanceof RelayError) throw grant.signal.reason;
          return answer(waitText(result), { ...result });
        } finally {
          grant.release();
        }
      }),
  );
}
