/**
 * Prints the tools/list answer and the instructions of a real door (on a
 * fresh temp store) as JSON on stdout: exactly what an agent's client reads,
 * so a reviewer can judge the contract from this alone. Every door gives the
 * same tools; only the instructions name the agent.
 *
 *   node --import tsx scripts/tools-list.ts                      stdio serve --agent scout-7, 2026-07-28
 *   node --import tsx scripts/tools-list.ts --door hub           the hub's /mcp (also: stdio, unnamed, bridge)
 *   node --import tsx scripts/tools-list.ts --era 2025-11-25     the 2025 handshake instead
 *   node --import tsx scripts/tools-list.ts --bytes              also, on stderr, each door and era's sizes and ttl
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { addKey } from '../lib/auth/keys.js';
import { initStore } from '../lib/ops/init.js';
import { spawnHub } from '../test/support/hub-process.js';

/** The whole tools/list answer (compact JSON of its tools), on every door and in every era. */
export const LISTING_BUDGET_BYTES = 8500;
/** The six descriptions together. */
export const DESCRIPTION_BUDGET_BYTES = 2400;

export const DOORS = ['stdio', 'unnamed', 'hub', 'bridge'] as const;
export type Door = (typeof DOORS)[number];
export const ERAS = ['2026-07-28', '2025-11-25'] as const;
export type Era = (typeof ERAS)[number];
/** The name the listing's named doors serve; a golden file holds it where the agent's name goes. */
export const AGENT = 'scout-7';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'p-e-relay');

export interface Listing {
  tools: Awaited<ReturnType<Client['listTools']>>['tools'];
  instructions: string;
  /** The 2026-07-28 cache hint (absent in the 2025 era, which has none). */
  ttlMs?: number;
  cacheScope?: string;
}

/** tools/list and the instructions of one door, in one era, over a fresh store of `idWidth` digits (default 4). */
export async function listTools(options: { door?: Door; era?: Era; idWidth?: number } = {}): Promise<Listing> {
  const { door = 'stdio', era = '2026-07-28' } = options;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-tools-'));
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const corpus = path.join(dir, 'corpus');
    const keys = path.join(dir, 'keys');
    await initStore({ corpus, keys, idWidth: options.idWidth });
    await addKey(keys, AGENT);
    const client = new Client({ name: 'tools-list', version: '0.0.0' }, { versionNegotiation: { mode: era === '2025-11-25' ? 'legacy' : { pin: era } } as never });
    const env = { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'silent' };
    const stdio = (args: string[]) => new StdioClientTransport({ command: process.execPath, args: [BIN, ...args], env, stderr: 'ignore' });
    if (door === 'stdio' || door === 'unnamed') {
      await client.connect(stdio(['serve', '--corpus', corpus, ...(door === 'stdio' ? ['--agent', AGENT] : [])]));
    } else {
      const hub = await spawnHub({ corpus, keys });
      stops.push(() => hub.stop());
      await client.connect(door === 'hub' ? new StreamableHTTPClientTransport(new URL('/mcp', hub.url)) : stdio(['bridge', '--url', hub.url, '--agent', AGENT, '--keys', keys]));
    }
    stops.unshift(() => client.close());
    const listed = (await client.listTools()) as Awaited<ReturnType<Client['listTools']>> & { ttlMs?: number; cacheScope?: string };
    return { tools: listed.tools, instructions: client.getInstructions() ?? '', ...(listed.ttlMs === undefined ? {} : { ttlMs: listed.ttlMs, cacheScope: listed.cacheScope }) };
  } finally {
    for (const stop of stops) await stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

/** The bytes a client reads: the tools as compact JSON. */
export function listingBytes(listing: Listing): number {
  return Buffer.byteLength(JSON.stringify(listing.tools));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const option = (name: string) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  const door = (option('--door') ?? 'stdio') as Door;
  const era = (option('--era') ?? '2026-07-28') as Era;
  process.stdout.write(JSON.stringify(await listTools({ door, era }), null, 2) + '\n');
  if (process.argv.includes('--bytes')) {
    for (const d of DOORS) {
      for (const e of ERAS) {
        const listing = await listTools({ door: d, era: e });
        const descriptions = listing.tools.reduce((sum, tool) => sum + Buffer.byteLength(tool.description ?? ''), 0);
        process.stderr.write(`${d.padEnd(8)} ${e}  tools/list ${listingBytes(listing)} of ${LISTING_BUDGET_BYTES}, ` +
          `descriptions ${descriptions}, instructions ${Buffer.byteLength(listing.instructions)}, ttlMs ${listing.ttlMs ?? '-'}\n`);
      }
    }
  }
}
