/**
 * The stdio door: one server process per agent, spawned by the agent's MCP
 * client, sharing the corpus with every other process. stdout belongs to the
 * protocol; everything else goes to stderr.
 *
 * The server answers tools/list before the start-up scan is done; tool calls
 * that need the index wait for it inside the store.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Logger } from '../log.js';
import { RelayStore, type StoreOptions } from '../store.js';
import { stdioDoor } from './door.js';
import { createMcpServer } from './server.js';

export async function serveStdio(options: StoreOptions & { log: Logger }): Promise<void> {
  const store = await RelayStore.prepare(options);
  const server = createMcpServer(store, { current: stdioDoor });
  const transport = new StdioServerTransport();
  await server.connect(transport);
  const opened = store.open().then(
    () => options.log.debug(`serving ${store.size} records from ${store.paths.corpus} over stdio`),
    (err) => options.log.error(`cannot open the corpus: ${(err as Error).message}`),
  );

  // The client closing our stdin is how a stdio session ends.
  await new Promise<void>((resolve) => {
    const done = () => resolve();
    process.stdin.once('end', done);
    process.stdin.once('close', done);
    // Chain, never replace: connect() put the SDK's own close handler here,
    // which aborts calls in flight; without it a wait outlives its client.
    const sdkOnClose = transport.onclose;
    transport.onclose = () => {
      sdkOnClose?.();
      done();
    };
    process.once('SIGTERM', done);
    process.once('SIGINT', done);
  });
  await opened;
  await server.close().catch(() => {});
  await store.close();
}
