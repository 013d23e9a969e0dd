/**
 * The test kit's one hub spawner: `p-e-relay serve --http` (or another
 * command that prints the same banner, such as test/fixtures/serve-http.ts)
 * as a child process, and the one parser of its banner. Readiness is the
 * banner itself, read from stderr as it arrives: `serving URL (…)` once it
 * listens, then `corpus: …` once the start-up scan is done.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cleanup, type Cleanup } from './cleanup.js';
import { BIN, killed, scratchDir } from './helpers.js';

export type { Cleanup };

export interface HubProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  port: number;
  stderr(): string;
  /** SIGTERM, then wait for the exit. Safe to call twice. */
  stop(): Promise<void>;
}

export interface HubSpawn {
  corpus: string;
  keys: string;
  /** 0 (the default) takes any free port. */
  port?: number;
  /** More `serve` flags. */
  args?: string[];
  /** The whole argv instead of `bin/p-e-relay serve --http …` (a fixture that prints the same banner). */
  argv?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Resolve once the hub listens (default), or once its start-up scan is done too. */
  until?: 'listening' | 'scanned';
  /** Stops the hub after the test; `kill` is the signal it sends (SIGTERM by default). */
  cleanup?: Cleanup | null;
  kill?: NodeJS.Signals;
  timeoutMs?: number;
}

const LISTENING = /serving (http:\/\/\S+) \(/;
const SCANNED = /^p-e-relay: corpus: /m;

/** The URL the banner says the hub serves, or null while it has not said so. */
export function bannerUrl(stderr: string): string | null {
  return LISTENING.exec(stderr)?.[1] ?? null;
}

export async function spawnHub(options: HubSpawn): Promise<HubProcess> {
  const argv = options.argv ?? [BIN, 'serve', '--http', '--port', String(options.port ?? 0), '--corpus', options.corpus, '--keys', options.keys, ...(options.args ?? [])];
  // Never the checkout by default: its ./corpus and ./keys are the user's (helpers.ts, runCli).
  const child = spawn(process.execPath, argv, { cwd: options.cwd ?? scratchDir(), env: { ...process.env, P_E_RELAY_LOG: 'warn', ...options.env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await killed(child);
  };
  if (options.cleanup) cleanup(options.cleanup, async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(options.kill ?? 'SIGTERM');
    await killed(child);
  });
  const timeoutMs = options.timeoutMs ?? 30_000;
  const url = await new Promise<string>((resolve, reject) => {
    const look = () => {
      const url = bannerUrl(stderr);
      if (url === null || (options.until === 'scanned' && !SCANNED.test(stderr))) return;
      done();
      resolve(url);
    };
    const exited = (code: number | null) => {
      done();
      reject(new Error(`the hub exited (${code}) before serving:\n${stderr}`));
    };
    const timer = setTimeout(() => {
      done();
      child.kill('SIGKILL');
      reject(new Error(`the hub did not ${options.until === 'scanned' ? 'finish its start-up scan' : 'start'} in ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.stderr!.off('data', look);
      child.off('exit', exited);
    };
    child.stderr!.on('data', look);
    child.once('exit', exited);
  });
  return { child, pid: child.pid!, url, port: Number(new URL(url).port), stderr: () => stderr, stop };
}
