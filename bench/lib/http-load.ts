/**
 * HTTP clients for the bench: a keep-alive JSON poster driven in concurrent
 * lanes (the same loop for the raw handler, the naive server and the hub),
 * an SSE reader, and the hub started as `bin/p-e-relay serve --http`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { authorizationFor } from '../../lib/auth/sign.js';
import { BIN } from './paths.js';
import { nowMs } from './stats.js';

export interface Reply {
  status: number;
  body: string;
}

export function request(agent: http.Agent, port: number, method: string, path: string, body: string | null, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers: body === null ? headers : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

const MCP_HEADERS = { accept: 'application/json, text/event-stream' };

/** A tools/call as one stateless POST /mcp, the way any 2025-era Streamable HTTP client sends it. */
export function toolCall(id: number, name: string, args: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
}

/** The same call as a 2026-07-28 client sends it: the `_meta` envelope in the body… */
export function modernToolCall(id: number, name: string, args: Record<string, unknown>): string {
  const _meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta } });
}

/** …and the headers that repeat it. */
export function modernHeaders(name: string): Record<string, string> {
  return { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name };
}

/** Requests per second over `concurrency` keep-alive connections for `ms`; every answer must be a 200 without an error. */
export async function httpRate(port: number, path: string, concurrency: number, ms: number, body: (n: number) => string, headers: Record<string, string> = {}): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const start = nowMs();
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (nowMs() - start < ms) {
        const reply = await request(agent, port, 'POST', path, body(n), { ...MCP_HEADERS, ...headers });
        if (reply.status !== 200 || reply.body.includes('"isError":true') || reply.body.includes('"error":')) throw new Error(`POST ${path} answered ${reply.status}: ${reply.body.slice(0, 300)}`);
        n++;
      }
    }),
  );
  const rate = (n * 1000) / (nowMs() - start);
  agent.destroy();
  return rate;
}

export interface SseReader {
  /** Resolves with the arrival time of the event with this id. */
  arrival(id: string): Promise<number>;
  close(): void;
}

/** Opens GET /events signed by `agent`, starting after `after`; resolves once the stream answered 200. */
export function openEvents(port: number, agent: string, key: Buffer, after: string): Promise<SseReader> {
  return new Promise((resolve, reject) => {
    const arrivals = new Map<string, number>();
    const waiting = new Map<string, (t: number) => void>();
    const req = http.get({ host: '127.0.0.1', port, path: `/events?after=${after}`, headers: { accept: 'text/event-stream', authorization: authorizationFor(agent, key, 'GET', Buffer.alloc(0)) } }, (res) => {
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => reject(new Error(`GET /events for ${agent} answered ${res.statusCode}: ${text}`)));
        return;
      }
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const t = nowMs();
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (.+)$/m.exec(event)?.[1];
          if (!id) continue;
          arrivals.set(id, t);
          waiting.get(id)?.(t);
        }
      });
      res.on('error', () => {});
      resolve({
        arrival: (id) => {
          const t = arrivals.get(id);
          return t !== undefined ? Promise.resolve(t) : new Promise((r) => waiting.set(id, r));
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

export interface HubProcess {
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** `p-e-relay serve --http` on a free port; resolves once it says its corpus is indexed. */
export function startHub(corpus: string, keys: string, extra: string[] = []): Promise<HubProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--http', '--port', '0', '--corpus', corpus, '--keys', keys, ...extra], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'warn' } });
    let text = '';
    let port = 0;
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      text += d;
      port ||= Number(/serving http:\/\/[^:\s]+:(\d+)/.exec(text)?.[1] ?? 0);
      if (port && /corpus: .*\(\d+ records\)/.test(text)) {
        resolve({
          port,
          child,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.on('exit', (code) => reject(new Error(`the hub exited (${code}) before it was ready: ${text}`)));
  });
}
