/**
 * The HTTP ceiling: a node:http handler that reads a JSON body, parses it and
 * answers a JSON-RPC result of about the size of a get_relay answer — what
 * any HTTP JSON endpoint costs here before it does any work.
 */
import http from 'node:http';
import { send } from './ipc.js';

const text = 'provenance: as-received\n' + 'x'.repeat(400);
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const request = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    const body = JSON.stringify({ jsonrpc: '2.0', id: request.id ?? null, result: { content: [{ type: 'text', text }] } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => send({ type: 'ready', port: (server.address() as { port: number }).port }));
