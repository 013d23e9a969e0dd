/**
 * The stdio door: one server process per agent, spawned by the agent's MCP
 * client, sharing the corpus with every other process. stdout belongs to the
 * protocol; everything else goes to stderr.
 *
 * Nothing costly happens before a call needs the index: tools/list is
 * answered from the store's settings alone, and the first call that needs the
 * index opens the store (loads the snapshot, checks it against the disk).
 * Some clients spawn a server only to probe it and then spawn the real one;
 * the probe then costs node's start and nothing more.
 *
 * The session ends when stdin ends (the client is done or gone). Calls in
 * flight are still answered (a script may pipe requests in and close its
 * end), except that a blocked wait_for_relay ends at once with what it has:
 * nothing else will arrive to wake it for a client that has left.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../log.js';
import { RelayStore, type StoreOptions } from '../../store/store.js';
import { Door } from '../door.js';
import { createMcpServer } from '../server.js';

/** How long answers to calls in flight may take after stdin ends (an append is milliseconds). */
const DRAIN_MS = 10_000;

export async function serveStdio(options: StoreOptions & { log: Logger }): Promise<void> {
  const store = await RelayStore.prepare(options);
  const ending = new AbortController();
  // No hub: nothing is signed or spent. A wait ends with the session, since nothing will wake it once the client has left.
  const door = new Door({ channel: 'mcp', agent: null, closed: ending.signal });
  const server = createMcpServer(store, { current: door });
  const transport = new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: maxLineBytes(store.maxRecordBytes) });
  // A line that is not JSON-RPC, or too long to be one of ours, is the SDK's to
  // refuse; without this the operator would never learn why a session ended.
  server.server.onerror = (err) => options.log.warn(`stdio: ${err.message}`);
  await server.connect(transport);
  const inFlight = trackInFlight(transport);

  // A client that is gone cannot read its answers: writing to it fails with EPIPE.
  const stdoutBroken = new Promise<void>((resolve) => process.stdout.on('error', () => resolve()));
  await new Promise<void>((resolve) => {
    const done = () => resolve();
    void stdoutBroken.then(done);
    process.stdin.once('end', done);
    process.stdin.once('close', done);
    // Chain, never replace: connect() put the SDK's own close handler here,
    // which aborts calls in flight when the transport itself gives up.
    const sdkOnClose = transport.onclose;
    transport.onclose = () => {
      sdkOnClose?.();
      done();
    };
    process.once('SIGTERM', done);
    process.once('SIGINT', done);
  });
  ending.abort();
  await Promise.race([inFlight.drained(DRAIN_MS), stdoutBroken]);
  await server.close().catch(() => {});
  await store.close();
}

/**
 * The longest line a client may send. The SDK's default (10 MiB) ends the
 * session on any longer line, but a record the store takes can be longer as
 * JSON: JSON.stringify writes a control character such as U+0001 as six
 * characters. So: six times the record limit, plus room for the envelope.
 */
export function maxLineBytes(maxRecordBytes: number): number {
  return Math.max(STDIO_DEFAULT_MAX_BUFFER_SIZE, 6 * maxRecordBytes + 64 * 1024);
}

/** Requests received and not yet answered (or cancelled), so that the end of input can let them finish. */
function trackInFlight(transport: StdioServerTransport): { drained(timeoutMs: number): Promise<void> } {
  const pending = new Set<unknown>();
  let wake = () => {};
  const settle = (id: unknown) => {
    if (pending.delete(id) && pending.size === 0) wake();
  };
  const receive = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage) => {
    if ('method' in message && 'id' in message) pending.add(message.id);
    if ('method' in message && message.method === 'notifications/cancelled') settle((message.params as { requestId?: unknown } | undefined)?.requestId);
    receive?.(message);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message: JSONRPCMessage) => {
    try {
      return await send(message);
    } finally {
      if (!('method' in message) && 'id' in message) settle(message.id);
    }
  };
  return {
    drained: (timeoutMs) =>
      pending.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, timeoutMs).unref();
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          }),
  };
}
