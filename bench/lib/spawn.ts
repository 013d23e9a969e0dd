/** Short-lived child processes (the CLI), and groups of IPC workers started together. */
import { spawn } from 'node:child_process';
import type { Worker } from './procs.js';

/** Runs a command to completion, feeding `input` on stdin; rejects on a non-zero exit. */
export function runProcess(command: string, args: string[], input = '', env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited ${code}: ${err.trim()}`))));
    child.stdin.end(input);
  });
}

export interface GroupRun {
  /** Operations per second over the whole group: all counts over the span from the first start to the last end. */
  rate: number;
  count: number;
}

/** Tells every worker to go at once, for `ms`, and adds up what they did. */
export async function runGroup(workers: Worker[], ms: number, extra: Record<string, unknown> = {}): Promise<GroupRun> {
  const done = workers.map((w) => w.next<{ count: number; start: number; end: number }>('done'));
  for (const w of workers) w.send({ type: 'go', ms, ...extra });
  const reports = await Promise.all(done);
  const count = reports.reduce((a, r) => a + r.count, 0);
  const span = Math.max(...reports.map((r) => r.end)) - Math.min(...reports.map((r) => r.start));
  return { rate: (count * 1000) / span, count };
}

export async function allReady(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.next('ready')));
}
