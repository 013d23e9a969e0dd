/**
 * The stdio ceiling: an MCP server with the same SDK and one tool that does
 * nothing, so a tool call's cost is only the SDK, JSON and the pipes.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'bare', version: '0.0.0' });
server.registerTool('noop', { description: 'answers at once', inputSchema: { id: z.string().optional() } }, async () => ({ content: [{ type: 'text', text: 'relay-0042 PRESENT' }] }));
await server.connect(new StdioServerTransport());
