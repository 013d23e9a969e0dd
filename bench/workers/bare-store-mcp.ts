/**
 * The store behind the bare SDK server: the v2 server on its own
 * `serveStdio`, as bare-mcp.ts, with three tools that hand their arguments
 * straight to p-e-relay's store (no door, no input or output schema beyond
 * a loose object, a one-line text answer). What `serve` costs per call above
 * this is its MCP layer (lib/mcp/); what this costs above bare-mcp is the store.
 *
 *   node bare-store-mcp.mjs CORPUS
 */
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { parseFilter } from '../../lib/model/filter.js';
import { encodeRecordText } from '../../lib/model/record.js';
import { RelayStore } from '../../lib/store/store.js';

const corpus = process.argv[2];
if (!corpus) throw new Error('usage: bare-store-mcp CORPUS');
const store = await RelayStore.prepare({ corpus });
const loose = z.looseObject({});
type Args = Record<string, any>;

serveStdio(() => {
  const server = new McpServer({ name: 'bare-store', version: '0.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('exists', { description: 'store.exists', inputSchema: loose }, async (args: Args) => {
    const r = await store.exists(args.id);
    return { content: [{ type: 'text', text: `${r.id} ${r.state}` }] };
  });
  server.registerTool('wait_for_relay', { description: 'store.wait', inputSchema: loose }, async (args: Args, ctx) => {
    const r = await store.wait({ after: args.after, timeoutMs: args.timeout_ms, filter: parseFilter({ to: args.to }, store.shape), signal: ctx.mcpReq.signal });
    return { content: [{ type: 'text', text: `${r.appeared.map((a) => a.id).join(' ')} cursor ${r.cursor}` }] };
  });
  server.registerTool('append_relay', { description: 'store.append', inputSchema: loose }, async (args: Args) => {
    const r = await store.append(encodeRecordText(args.bytes), { depositedBy: 'mcp' });
    return { content: [{ type: 'text', text: `stored ${r.id}` }] };
  });
  return server;
});
