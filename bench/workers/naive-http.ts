/**
 * The naive pattern issue 3 is measured against: p-e-relay's own store and
 * tools behind Streamable HTTP, but a brand-new McpServer and transport built
 * for every request (the SDK's stateless pattern), here on the v2 server: a
 * stateless WebStandardStreamableHTTPServerTransport answering JSON, as the
 * hub's 2025-era leg does, fed a web Request built from the node request.
 */
import http from 'node:http';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { Door } from '../../lib/doors/door.js';
import { createMcpServer } from '../../lib/mcp/server.js';
import { RelayStore } from '../../lib/store/store.js';
import { send } from './ipc.js';

const [corpus] = process.argv.slice(2) as [string];
const store = await RelayStore.prepare({ corpus });
await store.open();

const server = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
  const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method, headers, body: req.method === 'POST' ? Buffer.concat(chunks) : undefined });

  const mcp = createMcpServer(store, { current: new Door({ channel: 'mcp', agent: null }) }, {});
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void mcp.close();
  });
  await mcp.connect(transport);
  const response = await transport.handleRequest(request);
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => (out[name] = value));
  res.writeHead(response.status, out).end(Buffer.from(await response.arrayBuffer()));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => send({ type: 'ready', port: (server.address() as { port: number }).port }));
