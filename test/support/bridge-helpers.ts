/**
 * Fixtures for the bridge: a real hub process (`serve --http`) on a temp
 * store with real key files, and the real SDK client over stdio to a real
 * `bridge` process pointed at it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { addKey } from '../../lib/auth/keys.js';
import { initStore } from '../../lib/ops/init.js';
import { BIN, record, textOf } from './helpers.js';
import { cleanup, type Cleanup } from './cleanup.js';
import { spawnHub, type HubProcess as KitHub } from './hub-process.js';

export type { Cleanup };

export interface HubProcess extends KitHub {
  corpus: string;
  keys: string;
}

/** A fresh store (corpus + keys) with a key for each agent, removed afterwards. */
export async function hubStore(t: Cleanup, options: { agents?: string[]; idWidth?: number } = {}): Promise<{ corpus: string; keys: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-bridge-'));
  cleanup(t, () => rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 }));
  const corpus = path.join(dir, 'corpus');
  const keys = path.join(dir, 'keys');
  await initStore({ corpus, keys, idWidth: options.idWidth });
  for (const agent of options.agents ?? ['scout-7']) await addKey(keys, agent);
  return { corpus, keys };
}

/**
 * `p-e-relay serve --http` as a child process, on `port` (default: any free
 * one), with a key for each agent; resolves once it prints the URL it serves.
 */
export async function startHubProcess(
  t: Cleanup,
  options: { agents?: string[]; args?: string[]; port?: number; idWidth?: number; store?: { corpus: string; keys: string } } = {},
): Promise<HubProcess> {
  const store = options.store ?? (await hubStore(t, options));
  // Stopped before its store goes: cleanup.ts runs the last registered first.
  const hub: KitHub = await spawnHub({ corpus: store.corpus, keys: store.keys, port: options.port, args: options.args });
  cleanup(t, () => hub.stop());
  return { ...hub, corpus: store.corpus, keys: store.keys };
}

export interface BridgeClient {
  client: Client;
  stderr(): string;
}

/** The real SDK client over stdio to `p-e-relay bridge --url URL --agent AGENT --keys KEYS`. */
export async function bridgeClient(t: Cleanup, url: string, agent: string, keys: string): Promise<BridgeClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'bridge', '--url', url, '--agent', agent, '--keys', keys],
    env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const client = new Client({ name: 'p-e-relay-bridge-test', version: '0.0.0' });
  await client.connect(transport);
  cleanup(t, () => client.close());
  return { client, stderr: () => stderr };
}

/** A loopback port nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The hub's p_e_relay_active_waits gauge, from GET /metrics. */
export async function activeWaits(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^p_e_relay_active_waits (\d+)$/m.exec(text);
  return m ? Number(m[1]) : NaN;
}

/** An append_relay of a record with these headers through `client`, asserted stored; its id. */
export async function appendRecord(client: Client, headers: Record<string, string>, body = 'text'): Promise<string> {
  const r = (await client.callTool({ name: 'append_relay', arguments: { bytes: record(headers, body) } })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return (r.structuredContent as { id: string }).id;
}

/** The ids an inbox wait through `client` answers, waiting at most `timeout_ms`; `meta` goes in the call's `_meta`. */
export async function inboxIds(client: Client, timeout_ms: number, meta?: Record<string, unknown>): Promise<string[]> {
  const r = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms }, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return (r.structuredContent as { appeared: { id: string }[] }).appeared.map((a) => a.id);
}
