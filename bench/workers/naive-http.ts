/**
 * The naive pattern issue 3 is measured against: p-e-relay's own store and
 * tools behind Streamable HTTP, but a brand-new McpServer and transport built
 * for every request (what the SDK's stateless example does).
 */
import http from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Door } from '../../lib/mcp/door.js';
import { createMcpServer } from '../../lib/mcp/server.js';
import { RelayStore } from '../../lib/store/store.js';
import { send } from './ipc.js';

const [corpus] = process.argv.slice(2) as [string];
const store = await RelayStore.prepare({ corpus });
await store.open();

const server = http.createServer(async (req, res) => {
  const mcp = createMcpServer(store, { current: new Door({ channel: 'mcp', agent: null }) });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void mcp.close();
  });
  await mcp.connect(transport);
  await transport.handleRequest(req, res);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => send({ type: 'ready', port: (server.address() as { port: number }).port }));
