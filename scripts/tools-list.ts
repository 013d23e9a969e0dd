/**
 * Prints the tools/list answer of a real `p-e-relay serve` (over stdio, on a
 * fresh temp store) as JSON on stdout: exactly what an agent's client reads,
 * so a grader can judge the descriptions from this alone.
 *
 *   node --import tsx scripts/tools-list.ts            the JSON
 *   node --import tsx scripts/tools-list.ts --bytes    also, on stderr, each description's size in bytes and the total
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { initStore } from '../lib/ops/init.js';

export const DESCRIPTION_BUDGET_BYTES = 4720;

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'p-e-relay');

/** The tools/list answer of a real stdio server over a fresh store (of `idWidth` digits; default 4). */
export async function listTools(options: { idWidth?: number } = {}): Promise<Awaited<ReturnType<Client['listTools']>>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-tools-'));
  try {
    await initStore({ corpus: path.join(dir, 'corpus'), keys: path.join(dir, 'keys'), idWidth: options.idWidth });
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'serve', '--corpus', path.join(dir, 'corpus')], stderr: 'ignore' });
    const client = new Client({ name: 'tools-list', version: '0.0.0' });
    await client.connect(transport);
    try {
      return await client.listTools();
    } finally {
      await client.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const list = await listTools();
  process.stdout.write(JSON.stringify(list, null, 2) + '\n');
  if (process.argv.includes('--bytes')) {
    let total = 0;
    for (const tool of list.tools) {
      const bytes = Buffer.byteLength(tool.description ?? '');
      total += bytes;
      process.stderr.write(`${tool.name.padEnd(16)} ${bytes}\n`);
    }
    process.stderr.write(`${'total'.padEnd(16)} ${total} of ${DESCRIPTION_BUDGET_BYTES}\n`);
  }
}
