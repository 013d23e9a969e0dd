/**
 * What the multi-host beds share (multi-host.ts, gluster.ts): one deadline
 * that every command and child is cut to, checks that print and count,
 * children killed at the end, the probes for what a bed needs, and the run
 * itself: the bed's main, then its tear-down whatever happened (on SIGINT
 * and SIGTERM too), and exit 1 if any check failed.
 *
 * A bed is a script run as root, alone (`npm run test:multi-host`), or by
 * test/system/multi-host.test.ts under P_E_RELAY_MULTIHOST=1. It prints
 * "SKIP: <reason>" and exits 0 where the machine cannot hold it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const BIN = path.join(ROOT, 'bin', 'p-e-relay');
export const run = promisify(execFile);

/** A child of the bed: its stdout as lines, its stderr, and its exit. */
export interface Spawned {
  child: ChildProcess;
  lines: string[];
  stderr: () => string;
  exited: Promise<number | null>;
  /** The first line (so far or to come) that matches, or a throw once the child has exited or `timeoutMs` passed. */
  nextLine(match: (line: string) => boolean, timeoutMs: number): Promise<string>;
}

export interface Bed {
  /** The checks that failed, by what they checked. */
  problems: string[];
  /** The children still running, killed by tearDown. */
  children: Set<ChildProcess>;
  /** Milliseconds left before the bed's deadline. */
  left(): number;
  /** Prints `ok` or `FAIL` and what was checked; a failure makes the run exit 1. */
  check(ok: boolean, what: string): void;
  /** Runs a command to its end (cut to the deadline) and answers its stdout. */
  sh(cmd: string, args: string[], timeoutMs?: number): Promise<string>;
  /** Starts a child in the checkout, killed at `timeoutMs` or the deadline. */
  start(argv: string[], timeoutMs: number): Spawned;
}

/** A bed whose every wait ends by `deadlineMs` from now. */
export function bed(deadlineMs: number): Bed {
  const started = Date.now();
  const problems: string[] = [];
  const children = new Set<ChildProcess>();
  const left = () => deadlineMs - (Date.now() - started);

  function check(ok: boolean, what: string): void {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) problems.push(what);
  }

  async function sh(cmd: string, args: string[], timeoutMs = 60_000): Promise<string> {
    const { stdout } = await run(cmd, args, { timeout: Math.min(timeoutMs, left()), maxBuffer: 64 << 20 });
    return stdout;
  }

  function start(argv: string[], timeoutMs: number): Spawned {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'warn' } });
    children.add(child);
    const lines: string[] = [];
    const waiters: (() => void)[] = [];
    let err = '';
    let partial = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      partial += d;
      let cut: number;
      while ((cut = partial.indexOf('\n')) >= 0) {
        lines.push(partial.slice(0, cut));
        partial = partial.slice(cut + 1);
      }
      for (const w of waiters.splice(0)) w();
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), Math.min(timeoutMs, left()));
    const exited = new Promise<number | null>((resolve) =>
      child.on('close', (code) => {
        clearTimeout(killer);
        children.delete(child);
        for (const w of waiters.splice(0)) w();
        resolve(code);
      }),
    );
    return {
      child,
      lines,
      stderr: () => err,
      exited,
      async nextLine(match, ms) {
        const end = Date.now() + ms;
        for (;;) {
          const found = lines.find(match);
          if (found !== undefined) return found;
          if (child.exitCode !== null || Date.now() > end) throw new Error(`no line from ${argv.join(' ')} (stderr: ${err.slice(-800)})`);
          await new Promise<void>((resolve) => {
            waiters.push(resolve);
            setTimeout(resolve, 200);
          });
        }
      },
    };
  }

  return { problems, children, left, check, sh, start };
}

export interface BedSteps {
  /** Why this machine cannot hold the bed (installing what it can first), or null. */
  skipReason(): Promise<string | null>;
  main(): Promise<void>;
  tearDown(): Promise<void>;
}

/**
 * Runs a bed: "SKIP: <reason>" where the machine cannot hold it, else
 * `main`; then `tearDown` whether it threw or not (and on SIGINT or
 * SIGTERM, exiting 130). A throw counts as a failed check; exits 1 if any
 * check failed.
 */
export async function runBed(b: Bed, { skipReason, main, tearDown }: BedSteps): Promise<void> {
  const onSignal = () => void tearDown().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const skip = await skipReason();
    if (skip) console.log(`SKIP: ${skip}`);
    else await main();
  } catch (err) {
    b.problems.push((err as Error).message);
    console.log(`FAIL ${(err as Error).stack}`);
  } finally {
    await tearDown();
  }
  if (b.problems.length > 0) {
    console.log(`\n${b.problems.length} check(s) failed`);
    process.exit(1);
  }
  console.log('\nall checks passed');
}

/** The figures a bed measured, after the machine they were measured on. */
export function printFigures(figures: Record<string, string>, load = os.loadavg()[0]!.toFixed(1)): void {
  figures['machine'] = `${os.cpus().length} cores, load average ${load} at the end`;
  console.log('\nfigures:');
  for (const [k, v] of Object.entries(figures)) console.log(`  ${k}: ${v}`);
}

/**
 * Installs Debian packages with apt-get; null once they are in, else the
 * reason to skip (no network, no apt).
 */
export async function installPackages(packages: string[]): Promise<string | null> {
  console.log(`installing ${packages.join(' ')} from Debian's packages`);
  try {
    await run('apt-get', ['update', '-qq'], { timeout: 300_000 });
    await run('apt-get', ['install', '-y', '-qq', ...packages], { timeout: 600_000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    return null;
  } catch (err) {
    return `could not install ${packages.join(' ')}: ${(err as Error).message.split('\n')[0]}`;
  }
}

/** Null where this process may make network namespaces (a container may not), else the reason to skip. */
export async function namespacesAllowed(b: Bed, tag: string): Promise<string | null> {
  try {
    await b.sh('ip', ['netns', 'add', `${tag}-probe`]);
    await b.sh('ip', ['netns', 'del', `${tag}-probe`]);
    return null;
  } catch (err) {
    return `network namespaces are not allowed here (${(err as Error).message.split('\n')[0]})`;
  }
}

/** Whether a command is on PATH or in the sbin directories root's PATH holds. */
export function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/sbin', '/sbin']).some((dir) => existsSync(path.join(dir, cmd)));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Calls `fn` every 200 ms until it resolves, and answers what it resolved to; a throw naming `what` after `timeoutMs`. */
export async function untilOk<T>(fn: () => Promise<T>, what: string, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > end) throw new Error(`${what} did not come up: ${(err as Error).message}`);
      await sleep(200);
    }
  }
}

/** The p-th percentile (nearest rank) of `values`; NaN for none. */
export function pct(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const fmt = (ms: number) => (Number.isFinite(ms) ? `${Math.round(ms)} ms` : 'n/a');
