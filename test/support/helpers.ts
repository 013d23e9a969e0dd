/**
 * Shared fixtures: temp stores, the real CLI as a child process, and the
 * real MCP SDK client over real stdio pipes to `bin/p-e-relay serve`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { initStore } from '../../lib/ops/init.js';
import { openStore, type RelayStore, type StoreOptions } from '../../lib/store/store.js';
import { cleanup, type Cleanup } from './cleanup.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.join(ROOT, 'bin', 'p-e-relay');

/** A fresh temp directory, removed when the test ends. */
export async function tempDir(t: Cleanup, prefix = 'pe-relay-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  // Removed after what the test made in it (cleanup.ts runs last first); a process of another test kit's fixture
  // may still be finishing a rename into it, so rm retries ENOTEMPTY.
  cleanup(t, () => rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 }));
  return dir;
}

/** A fresh, initialised store directory (corpus + keys), removed after the test. */
export async function tempStore(t: Cleanup, options: { idWidth?: number } = {}): Promise<{ dir: string; corpus: string; keys: string }> {
  const dir = await tempDir(t);
  const corpus = path.join(dir, 'corpus');
  const keys = path.join(dir, 'keys');
  await initStore({ corpus, keys, idWidth: options.idWidth });
  return { dir, corpus, keys };
}

/** An open store over a fresh corpus, closed after the test. */
export async function openTempStore(t: TestContext, options: Partial<StoreOptions> = {}): Promise<RelayStore> {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, ...options });
  cleanup(t, () => store.close());
  return store;
}

export function record(headers: Record<string, string> = {}, body = 'hello'): string {
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
  return ['@p-e/x0', ...lines, '', body].join('\n');
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI as a child process. Without a `cwd` it runs in an empty
 * scratch directory, never in the checkout: there `./corpus` and `./keys` are
 * the user's own (`npm start` serves them), and a command given no --corpus
 * would act on them.
 */
export function runCli(args: string[], options: { cwd?: string; input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return runProcess([process.execPath, BIN, ...args], { ...options, cwd: options.cwd ?? scratchDir(), env: { ...process.env, ...options.env } });
}

let scratch: string | undefined;
/** One empty directory per test process for CLI runs given no `cwd`, removed when the process exits. */
export function scratchDir(): string {
  if (scratch === undefined) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pe-relay-cwd-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    scratch = dir;
  }
  return scratch;
}

/** Runs any command as a child process with exactly `env`, feeding it `input`, and collects what it prints. */
export function runProcess(argv: string[], options: { cwd?: string; input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd, env: options.env ?? process.env });
    let stdout = '';
    let stderr = '';
    // Decode as a stream: a multi-byte character split across two pipe chunks stays whole.
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** The real SDK client, connected over stdio to a spawned `p-e-relay serve`. */
export async function stdioClient(t: Cleanup | null, corpus: string, extraArgs: string[] = [], env: Record<string, string> = {}): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'serve', '--corpus', corpus, ...extraArgs],
    env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const client = new Client({ name: 'p-e-relay-test', version: '0.0.0' });
  await client.connect(transport);
  if (t !== null) cleanup(t, () => client.close());
  return { client, transport, stderr: () => stderr };
}

export function textOf(result: unknown): string {
  const r = result as CallToolResult;
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** The stable error code a refusal carries in _meta. */
export function errorCode(result: unknown): string | undefined {
  const meta = (result as CallToolResult)._meta as Record<string, { code?: string }> | undefined;
  return meta?.['p-e-relay/error']?.code;
}

export function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}
