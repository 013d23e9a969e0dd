/**
 * A raw JSON-RPC client over a real `p-e-relay serve` process's stdio (for
 * tests and the bench): it
 * sends requests as lines and records every line that comes back, so a
 * test sees exactly what a host such as Claude Code would read, server
 * notifications included (the SDK's client drops methods it has no handler
 * for, and a channel notification is one of those).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'p-e-relay');

export interface Notification {
  method: string;
  params: Record<string, unknown>;
}

export interface RawSession {
  child: ChildProcess;
  /** Every notification received so far, in order. */
  notifications: Notification[];
  request(method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>>;
  notify(method: string, params?: Record<string, unknown>): void;
  /** Resolves with the next notification of `method` after the `seen` already received (default: all so far), or rejects after `ms`. */
  next(method: string, ms?: number, seen?: number): Promise<Notification>;
  /** Calls a tool and returns its structuredContent. */
  tool(name: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
  stderr(): string;
  close(): Promise<void>;
}

/** Spawns `serve --corpus CORPUS ARGS…`, initializes (2025-06-18) with `capabilities`, and sends notifications/initialized. `after` (a test's t.after) closes it. */
export async function rawSession(corpus: string, args: string[], options: { capabilities?: Record<string, unknown>; env?: NodeJS.ProcessEnv; after?: (fn: () => Promise<void>) => void } = {}): Promise<RawSession> {
  const child = spawn(process.execPath, [BIN, 'serve', '--corpus', corpus, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const pending = new Map<number, (message: Record<string, unknown>) => void>();
  const notifications: Notification[] = [];
  const listeners = new Set<() => void>();
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as Record<string, unknown>;
    if (typeof message.id === 'number' && pending.has(message.id)) {
      pending.get(message.id)!(message);
      pending.delete(message.id);
    } else if (typeof message.method === 'string') {
      notifications.push({ method: message.method, params: (message.params ?? {}) as Record<string, unknown> });
      for (const listener of listeners) listener();
    }
  });
  let nextId = 1;
  const write = (message: Record<string, unknown>) => child.stdin!.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
  const request = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, (message) => (message.error ? reject(new Error(JSON.stringify(message.error))) : resolve(message.result as Record<string, unknown>)));
      write({ id, method, params });
    });
  const session: RawSession = {
    child,
    notifications,
    request,
    notify: (method, params = {}) => void write({ method, params }),
    next: (method, ms = 5000, seen = notifications.length) =>
      new Promise((resolve, reject) => {
        const look = () => {
          const found = notifications.slice(seen).find((n) => n.method === method);
          if (!found) return false;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const check = () => void look();
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no ${method} within ${ms} ms (stderr: ${stderr})`));
        }, ms);
        listeners.add(check);
        look();
      }),
    async tool(name, args = {}) {
      const result = await request('tools/call', { name, arguments: args });
      if (result.isError) throw new Error(JSON.stringify(result.content));
      return result.structuredContent as Record<string, unknown>;
    },
    stderr: () => stderr,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.stdin!.end();
      await exited;
    },
  };
  options.after?.(() => session.close());
  await request('initialize', { protocolVersion: '2025-06-18', capabilities: options.capabilities ?? {}, clientInfo: { name: 'raw-test', version: '0.0.0' } }).then((result) => {
    (session as RawSession & { initialized: Record<string, unknown> }).initialized = result;
  });
  session.notify('notifications/initialized');
  return session;
}

/** The initialize result a session got. */
export function initializeResult(session: RawSession): Record<string, unknown> {
  return (session as RawSession & { initialized: Record<string, unknown> }).initialized;
}
