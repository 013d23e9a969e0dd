/**
 * Fixtures for the fault, attack and fuzz suites: hub processes we can
 * SIGKILL and inspect (/proc/PID/fd, RSS, stderr), a raw JSON-RPC line
 * client for a stdio server (the SDK client will not send garbage), and a
 * fingerprint of a corpus to prove that a refusal changed nothing.
 *
 * Every suite has a short form that runs in `npm test` and a long form
 * behind P_E_RELAY_LONG=1; `scale(short, long)` picks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import type { TestContext } from 'node:test';
import type { HubOptions } from '../../lib/http/server.js';
import { BIN, ROOT, killed } from './helpers.js';
import { spawnHub, type HubProcess } from './hub-process.js';
import { cleanup } from './cleanup.js';

export type { HubProcess };

export const LONG = process.env.P_E_RELAY_LONG === '1';

/** The short figure in `npm test`, the long one under P_E_RELAY_LONG=1. */
export function scale(short: number, long: number): number {
  return LONG ? long : short;
}

const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'serve-http.ts');

export type TunedHub = Partial<Omit<HubOptions, 'store' | 'keys' | 'log'>> & { store?: { maxRecordBytes?: number; reconcileMs?: number } };

/**
 * A hub in its own process. With `tuned`, it is serveHttp() itself run from
 * test/fixtures/serve-http.ts with those options (short timeouts, high
 * limits); without, it is the built CLI: `p-e-relay serve --http`.
 */
export async function hubProcess(t: TestContext | null, corpus: string, keys: string, options: { args?: string[]; tuned?: TunedHub; env?: Record<string, string> } = {}): Promise<HubProcess> {
  return spawnHub({
    corpus,
    keys,
    args: options.args,
    argv: options.tuned && ['--import', 'tsx', FIXTURE, JSON.stringify({ ...options.tuned, store: { corpus, ...options.tuned.store }, keys })],
    cwd: ROOT,
    env: { P_E_RELAY_LOG: 'info', ...options.env },
    // "serving" comes before the start-up scan ends; the corpus line comes after.
    until: 'scanned',
    cleanup: t,
    kill: 'SIGKILL',
  });
}

/** Open file descriptors and resident memory of a live process, from /proc. */
export async function processStats(pid: number): Promise<{ fds: number; sockets: number; rssKiB: number }> {
  const fdDir = `/proc/${pid}/fd`;
  const names = await readdir(fdDir);
  let sockets = 0;
  for (const name of names) {
    const target = await readlink(path.join(fdDir, name)).catch(() => '');
    if (target.startsWith('socket:')) sockets++;
  }
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return { fds: names.length, sockets, rssKiB };
}

/** Every file of a corpus except .state/, as name → sha256: equal fingerprints mean nothing was added, removed or altered. */
export async function corpusFingerprint(corpus: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of (await readdir(corpus)).sort()) {
    if (name === '.state') continue;
    out.set(name, createHash('sha256').update(await readFile(path.join(corpus, name))).digest('hex'));
  }
  return out;
}

/** Names under .state/replay/<bucket>/: one per signature the guard has accepted. */
export async function replayEntries(corpus: string): Promise<string[]> {
  const dir = path.join(corpus, '.state', 'replay');
  const out: string[] = [];
  for (const bucket of await readdir(dir).catch(() => [] as string[])) {
    for (const name of await readdir(path.join(dir, bucket)).catch(() => [] as string[])) out.push(`${bucket}/${name}`);
  }
  return out.sort();
}

/** The guard's file name for a signature (sha256 of the sig, never the sig itself). */
export function replayEntryOf(sig: string, ts: string): string {
  const bucket = Math.floor(Number(ts) / 60) * 60;
  return `${bucket}/${createHash('sha256').update(sig).digest('hex')}`;
}

export interface RawAnswer {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/**
 * A stdio server spoken to line by line, so a test can send what no SDK
 * client would (broken JSON, wrong shapes) and still read every answer.
 */
export interface RawStdio {
  child: ChildProcess;
  /** Sends one line as is. */
  sendLine(line: string): void;
  /** Sends a request and resolves with the answer carrying its id. */
  request(method: string, params?: unknown, timeoutMs?: number): Promise<RawAnswer>;
  /** Every message the server wrote that was not an answer we asked for by id. */
  unsolicited: unknown[];
  /** Lines on stdout that were not JSON at all (must stay empty: stdout is the protocol). */
  garbage: string[];
  stderr(): string;
  alive(): boolean;
}

export async function rawStdio(t: TestContext | null, corpus: string, env: Record<string, string> = {}, args: string[] = []): Promise<RawStdio> {
  const child = spawn(process.execPath, [BIN, 'serve', '--corpus', corpus, ...args], { env: { ...process.env, P_E_RELAY_LOG: 'warn', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  if (t !== null) {
    cleanup(t, () => {
      child.kill('SIGKILL');
      return killed(child);
    });
  }
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdin!.on('error', () => {});
  const waiting = new Map<string, { resolve: (answer: RawAnswer) => void; reject: (err: Error) => void }>();
  child.once('exit', (code, signal) => {
    for (const w of waiting.values()) w.reject(new Error(`the server exited (${signal ?? code}) before answering`));
    waiting.clear();
  });
  const unsolicited: unknown[] = [];
  const garbage: string[] = [];
  let buffered = '';
  let nextId = 1;
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let message: RawAnswer;
      try {
        message = JSON.parse(line);
      } catch {
        garbage.push(line);
        continue;
      }
      const key = JSON.stringify(message.id);
      const w = waiting.get(key);
      if (w && (message.result !== undefined || message.error !== undefined)) {
        waiting.delete(key);
        w.resolve(message);
      } else unsolicited.push(message);
    }
  });
  const sendLine = (line: string) => {
    if (child.stdin!.writable) child.stdin!.write(line.endsWith('\n') ? line : `${line}\n`);
  };
  const request = (method: string, params?: unknown, timeoutMs = 30_000) =>
    new Promise<RawAnswer>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error('the server has exited'));
      const id = `q${nextId++}`;
      const timer = setTimeout(() => {
        waiting.delete(JSON.stringify(id));
        reject(new Error(`no answer to ${method} in ${timeoutMs} ms; stderr:\n${stderr}`));
      }, timeoutMs);
      waiting.set(JSON.stringify(id), {
        resolve: (answer) => {
          clearTimeout(timer);
          resolve(answer);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      sendLine(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));
    });
  const init = await request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'p-e-relay-fault', version: '0' } });
  if (!init.result) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
  sendLine(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  return { child, sendLine, request, unsolicited, garbage, stderr: () => stderr, alive: () => child.exitCode === null && child.signalCode === null };
}

/** Runs `tasks` with at most `limit` in flight. */
export async function pool<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  return out;
}
