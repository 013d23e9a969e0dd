/**
 * Child processes the bench drives: p-e-relay stdio servers (the built
 * bundle, through bin/p-e-relay, spoken to by the real SDK client), worker
 * scripts that talk back over IPC, and what /proc says a process holds.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BIN, WORKERS } from './paths.js';

export interface StdioPeer {
  client: Client;
  pid: number;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
  stderr(): string;
}

/** Connects the SDK client to any stdio MCP server; resolves once `initialize` is answered. */
export async function connectStdio(command: string, args: string[], env: Record<string, string> = {}): Promise<StdioPeer> {
  const transport = new StdioClientTransport({ command, args, env: { ...(process.env as Record<string, string>), ...env }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const client = new Client({ name: 'p-e-relay-bench', version: '0.0.0' });
  await client.connect(transport);
  return {
    client,
    pid: transport.pid!,
    async call(name, args = {}) {
      const result = (await client.callTool({ name, arguments: args }, { timeout: 120_000 })) as CallToolResult;
      if (result.isError) throw new Error(`${name} refused: ${JSON.stringify(result.content)}`);
      return result;
    },
    close: () => client.close(),
    stderr: () => stderr,
  };
}

/**
 * `bin/p-e-relay serve` over stdio on a corpus, spawned the way the README
 * tells an MCP client to: the launcher itself, so that its shebang's node
 * flags (the small young generation) apply, as they do for users.
 */
export function relayServer(corpus: string, extraArgs: string[] = []): Promise<StdioPeer> {
  return connectStdio(BIN, ['serve', '--corpus', corpus, ...extraArgs], { P_E_RELAY_LOG: 'warn' });
}

export interface Worker {
  child: ChildProcess;
  /** Resolves with the next message of this type. */
  next<T = Record<string, unknown>>(type: string): Promise<T>;
  send(message: Record<string, unknown>): void;
  stop(): Promise<void>;
}

/** Forks bench/workers/<name>.ts (through tsx) with an IPC channel. */
export function forkWorker(name: string, args: string[] = []): Worker {
  const child = fork(path.join(WORKERS, `${name}.ts`), args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inbox: Record<string, unknown>[] = [];
  const waiting: { type: string; resolve: (m: any) => void; reject: (e: Error) => void }[] = [];
  const deliver = () => {
    for (let i = 0; i < waiting.length; i++) {
      const w = waiting[i]!;
      const at = inbox.findIndex((m) => m.type === w.type);
      if (at === -1) continue;
      w.resolve(inbox.splice(at, 1)[0]);
      waiting.splice(i--, 1);
    }
  };
  child.on('message', (m) => {
    inbox.push(m as Record<string, unknown>);
    deliver();
  });
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`worker ${name} exited (${code}) before sending ${w.type}`));
  });
  return {
    child,
    next: (type) =>
      new Promise((resolve, reject) => {
        if (child.exitCode !== null) return reject(new Error(`worker ${name} has exited`));
        waiting.push({ type, resolve, reject });
        deliver();
      }),
    send: (message) => child.send(message),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export interface ProcFootprint {
  rssMb: number;
  fds: number;
  inotifyWatches: number;
  /** User + system CPU time the process has used so far. */
  cpuS: number;
  /** Proportional set size: resident memory with shared pages (node's own code, mostly) split among the processes sharing them. */
  pssMb: number;
}

/** Total user + system CPU seconds these processes have used so far (/proc). */
export async function cpuSecondsOf(pids: number[]): Promise<number> {
  return (await Promise.all(pids.map((pid) => footprint(pid)))).reduce((sum, f) => sum + f.cpuS, 0);
}

/** What one process holds, from /proc: resident memory, open fds, and inotify watches over all its inotify fds. */
export async function footprint(pid: number): Promise<ProcFootprint> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
  const fds = await fs.readdir(`/proc/${pid}/fd`);
  let inotifyWatches = 0;
  for (const fd of fds) {
    const target = await fs.readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    if (!target.includes('inotify')) continue;
    const info = await fs.readFile(`/proc/${pid}/fdinfo/${fd}`, 'utf8').catch(() => '');
    inotifyWatches += info.split('\n').filter((line) => line.startsWith('inotify wd:')).length;
  }
  const cpuS = (await cpuMsOf(pid)) / 1000;
  const rollup = await fs.readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const pssKb = Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? NaN);
  return { rssMb: rssKb / 1024, fds: fds.length, inotifyWatches, cpuS, pssMb: pssKb / 1024 };
}

/** User + system CPU a process has used so far, in ms (10 ms ticks). */
export async function cpuMsOf(pid: number): Promise<number> {
  // /proc/<pid>/stat: fields after the ")" closing the command name; utime and stime are the 12th and 13th, in clock ticks (100/s).
  const stat = (await fs.readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(stat[11]) + Number(stat[12])) * 10;
}

/**
 * CPU a process has used so far, in ms to the nanosecond: the sum of
 * /proc/<pid>/task/<tid>/schedstat over its threads (the main thread and
 * libuv's pool, which does a store's fsyncs). Unlike `cpuMsOf` it has no
 * 10 ms tick, so a batch of a few hundred sub-millisecond calls can be
 * timed; it misses threads that have already exited (node's stay).
 */
export async function threadCpuMs(pid: number): Promise<number> {
  let ns = 0;
  for (const tid of await fs.readdir(`/proc/${pid}/task`)) {
    const stat = await fs.readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').catch(() => '0');
    ns += Number(stat.split(' ')[0]);
  }
  return ns / 1e6;
}

/** The node flags on bin/p-e-relay's shebang line, which MCP clients get by running the launcher: spawn a floor with them too. */
export async function launcherFlags(): Promise<string[]> {
  const first = (await fs.readFile(BIN, 'utf8')).split('\n', 1)[0]!;
  const words = first.split(/\s+/);
  return words.slice(words.indexOf('node') + 1).filter((w) => w.startsWith('--'));
}

/** The text of a tool result. */
export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}
