/**
 * Prints the tools/list answer of a real `p-e-relay serve` (over stdio, on a
 * fresh temp store) as JSON on stdout: exactly what an agent's client reads,
 * so a grader can judge the descriptions from this alone.
 *
 *   node --import tsx scripts/tools-list.ts              the JSON
 *   node --import tsx scripts/tools-list.ts --bytes      also, on stderr, each description's size in bytes and the totals
 *   node --import tsx scripts/tools-list.ts --agent NAME a named server's listing (serve --agent NAME) and its instructions
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { initStore } from '../lib/ops/init.js';

export const DESCRIPTION_BUDGET_BYTES = 4720;
/** A named server's budgets: half the unnamed listing's, since its instructions say the loop once and each tool only what it does. */
export const NAMED_DESCRIPTION_BUDGET_BYTES = 2400;
export const NAMED_LISTING_BUDGET_BYTES = 8500;

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'p-e-relay');

export type Listing = Awaited<ReturnType<Client['listTools']>> & { instructions: string };

/** The tools/list answer (and the instructions) of a real stdio server over a fresh store (of `idWidth` digits; default 4), named `agent` if given. */
export async function listTools(options: { idWidth?: number; agent?: string } = {}): Promise<Listing> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-tools-'));
  try {
    await initStore({ corpus: path.join(dir, 'corpus'), keys: path.join(dir, 'keys'), idWidth: options.idWidth });
    const named = options.agent === undefined ? [] : ['--agent', options.agent];
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'serve', '--corpus', path.join(dir, 'corpus'), ...named], stderr: 'ignore' });
    const client = new Client({ name: 'tools-list', version: '0.0.0' });
    await client.connect(transport);
    try {
      return { ...(await client.listTools()), instructions: client.getInstructions() ?? '' };
    } finally {
      await client.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const at = process.argv.indexOf('--agent');
  const agent = at > 0 ? process.argv[at + 1] : undefined;
  const list = await listTools({ agent });
  process.stdout.write(JSON.stringify(list, null, 2) + '\n');
  if (process.argv.includes('--bytes')) {
    let total = 0;
    for (const tool of list.tools) {
      const bytes = Buffer.byteLength(tool.description ?? '');
      total += bytes;
      process.stderr.write(`${tool.name.padEnd(16)} ${bytes}\n`);
    }
    const budget = agent === undefined ? DESCRIPTION_BUDGET_BYTES : NAMED_DESCRIPTION_BUDGET_BYTES;
    process.stderr.write(`${'descriptions'.padEnd(16)} ${total} of ${budget}\n`);
    process.stderr.write(`${'tools/list'.padEnd(16)} ${Buffer.byteLength(JSON.stringify(list.tools))} (compact JSON)\n`);
    process.stderr.write(`${'instructions'.padEnd(16)} ${Buffer.byteLength(list.instructions)}\n`);
  }
}
