/**
 * `npm start` as a person runs it, and kills it: the real npm running the
 * package's start script, SIGKILLed. The hub it started must let go of its
 * port (docs/http.md), however many processes npm's script shell puts
 * between them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import test from 'node:test';
import { ROOT, tempStore } from '../support/helpers.js';
import { bannerUrl } from '../support/hub-process.js';
import { said } from '../support/poll.js';

/** Every process below `pid` now, from /proc: what to kill if the test fails half-way. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command name is in parentheses and may hold spaces; the ppid is the second field after it.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) if (parent === p) (found.push(child), walk(child));
  };
  walk(pid);
  return found;
}

/** Whether something accepts a connection on the port now. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

test('kill -9 of `npm start` ends the hub it started: the port is free again, with no process of it left', { timeout: 60_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  const npm = spawn('npm', ['start', '--', '--port', '0', '--corpus', corpus, '--keys', keys], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'info' } });
  let stderr = '';
  npm.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  npm.stdout!.resume();
  // Every process npm started holds its stderr open; the pipe ends when the last of them has exited.
  const pipeClosed = new Promise<void>((resolve) => npm.stderr!.once('close', resolve));
  let left: number[] = [];
  t.after(() => {
    for (const pid of [npm.pid!, ...left]) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  });
  await said(npm.stderr!, () => stderr, /serving http:\/\/\S+ \(/, 'the hub to serve', 30_000);
  const port = Number(new URL(bannerUrl(stderr)!).port);
  assert.ok(await accepts(port), 'the hub listens');
  left = descendants(npm.pid!);
  assert.ok(left.length > 0, 'npm runs the hub as a process of its own');

  npm.kill('SIGKILL');
  const ended = await Promise.race([pipeClosed.then(() => true), new Promise<false>((resolve) => setTimeout(resolve, 15_000, false).unref())]);
  const survivors = left.filter((pid) => {
    try {
      // A zombie has ended; only its parent has not reaped it yet.
      return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  });
  assert.deepEqual(survivors, [], `still running 15 s after npm was killed: ${survivors.map((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ')).join('; ')}`);
  assert.ok(ended, 'every process npm started has let go of its output');
  assert.equal(await accepts(port), false, `port ${port} is free again`);
  assert.match(stderr, /shutting down \(the process that started it is gone\)/);
});
