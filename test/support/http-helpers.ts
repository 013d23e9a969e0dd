/**
 * Fixtures for the HTTP hub: a real hub on 127.0.0.1 (port 0) over a temp
 * store with real key files, a signing fetch for the real SDK client, an SSE
 * reader over real fetch streams, and raw sockets for what fetch will not send.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import { startHub, type Hub, type HubOptions } from '../../lib/http/server.js';
import { initStore } from '../../lib/ops/init.js';
import { RelayStore } from '../../lib/store/store.js';
import { cleanup } from './cleanup.js';

export interface TestHub {
  hub: Hub;
  url: string;
  store: RelayStore;
  corpus: string;
  keys: string;
  /** The key text of an agent added at start. */
  key(agent: string): Promise<Buffer>;
}

export interface HubStore {
  dir: string;
  corpus: string;
  keys: string;
  /** Registers something to stop (a hub, a process) before the directory is removed. */
  stopFirst(stop: () => unknown): void;
}

/**
 * A fresh store (corpus + keys) for a hub, removed after the test: after
 * everything given to stopFirst has stopped (last first), and, as cleanup.ts
 * runs the last registered first, after the clients and processes the test
 * made on it later.
 */
export async function hubStore(t: TestContext): Promise<HubStore> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-hub-'));
  const stops: (() => unknown)[] = [];
  cleanup(t, async () => {
    for (const stop of stops.reverse()) await stop();
    await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 });
  });
  const corpus = path.join(dir, 'corpus');
  const keys = path.join(dir, 'keys');
  await initStore({ corpus, keys });
  return { dir, corpus, keys, stopFirst: (stop) => void stops.push(stop) };
}

/** A hub on a fresh store, with a key for each agent named; closed after the test. */
export async function startTestHub(t: TestContext, options: { agents?: string[] } & Partial<Omit<HubOptions, 'store' | 'keys'>> = {}): Promise<TestHub> {
  const { corpus, keys, stopFirst } = await hubStore(t);
  for (const agent of options.agents ?? ['scout-7']) await addKey(keys, agent);
  const store = await RelayStore.prepare({ corpus });
  const hub = await startHub({ port: 0, ...options, store, keys });
  stopFirst(async () => {
    await hub.close();
    await store.close();
  });
  await store.ready;
  return {
    hub,
    url: hub.url,
    store,
    corpus,
    keys,
    key: async (agent) => (await readKey(keys, agent)) ?? Promise.reject(new Error(`no key for ${agent}`)),
  };
}

export function keyFile(keys: string, agent: string): string {
  return path.join(keys, `${agent}.key`);
}

/** An Authorization header value for this request, signed now (or at `atMs`). */
export function sign(agent: string, key: Uint8Array, method: string, body: string | Uint8Array = '', atMs = Date.now()): string {
  return authorizationFor(agent, key, method, typeof body === 'string' ? Buffer.from(body) : body, atMs);
}

/** A fetch that signs every request that carries a body, the way an agent's HTTP client would. */
export function signingFetch(agent: string, key: Uint8Array): typeof fetch {
  return (input, init = {}) => {
    const headers = new Headers(init.headers);
    if (typeof init.body === 'string') headers.set('Authorization', sign(agent, key, init.method ?? 'GET', init.body));
    return fetch(input, { ...init, headers });
  };
}

/** The real SDK client over Streamable HTTP, optionally signing as an agent. */
export async function httpClient(t: TestContext, url: string, signer?: { agent: string; key: Uint8Array }): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', url), signer ? { fetch: signingFetch(signer.agent, signer.key) } : {});
  const client = new Client({ name: 'p-e-relay-http-test', version: '0.0.0' });
  await client.connect(transport);
  cleanup(t, () => client.close());
  return client;
}

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

/** Reads SSE events from a fetch response body, one at a time. */
export function sseReader(response: Response): { next(timeoutMs?: number): Promise<SseEvent>; untilEnd(timeoutMs?: number): Promise<void>; comments: string[]; close(): Promise<void> } {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let finished = false;
  const comments: string[] = [];
  /** Reads one chunk into the buffer; false when the deadline passed first. */
  async function readChunk(deadline: number): Promise<boolean> {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    let timer: NodeJS.Timeout | undefined;
    const chunk = await Promise.race([
      reader.read().catch(() => ({ done: true as const, value: undefined })),
      new Promise<null>((r) => (timer = setTimeout(() => r(null), left))),
    ]);
    clearTimeout(timer);
    if (chunk === null) return false;
    if (chunk.done) finished = true;
    else buffer += chunk.value;
    return true;
  }
  async function next(timeoutMs = 5000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const cut = buffer.indexOf('\n\n');
      if (cut >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event: SseEvent = { data: '' };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) comments.push(line.slice(1).trim());
          else if (line.startsWith('id: ')) event.id = line.slice(4);
          else if (line.startsWith('event: ')) event.event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length === 0 && event.id === undefined) continue; // a comment block
        event.data = data.join('\n');
        return event;
      }
      if (finished) throw new Error('the stream ended');
      if (!(await readChunk(deadline))) throw new Error('no event in time');
    }
  }
  async function untilEnd(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!finished) if (!(await readChunk(deadline))) throw new Error('the stream did not end in time');
  }
  return { next, untilEnd, comments, close: () => reader.cancel().catch(() => {}) };
}

/** Opens GET /events signed by header; extra headers and query as given. */
export async function openEvents(url: string, agent: string, key: Uint8Array, options: { query?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  return fetch(`${url}/events${options.query ? `?${options.query}` : ''}`, { headers: { Authorization: sign(agent, key, 'GET'), ...options.headers } });
}

/** Sends raw bytes on a fresh socket and collects everything the server answers until it closes (or the time runs out). */
export function rawExchange(port: number, chunks: (string | Buffer)[], timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', (err) => (answer ? undefined : reject(err)));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
    });
  });
}

