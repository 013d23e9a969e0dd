/**
 * The stdio ceiling: an MCP server on the same SDK (the v2 server, served by
 * its own `serveStdio`, both eras, as `serve` is) with one tool that does
 * nothing, so a tool call's cost is only the SDK, JSON and the pipes, and
 * spawn → tools/list is only node and the SDK.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

serveStdio(() => {
  const server = new McpServer({ name: 'bare', version: '0.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('noop', { description: 'answers at once', inputSchema: z.object({ id: z.string().optional() }) }, async () => ({ content: [{ type: 'text', text: 'relay-0042 PRESENT' }] }));
  return server;
});
