/** The machine a run happened on, for the record beside its figures. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { BENCH_OUT } from './paths.js';
import fs from 'node:fs/promises';

export async function machineLines(): Promise<string[]> {
  await fs.mkdir(BENCH_OUT, { recursive: true });
  const df = execFileSync('df', ['-T', BENCH_OUT], { encoding: 'utf8' }).trim().split('\n')[1]?.split(/\s+/) ?? [];
  const inotify = await fs.readFile('/proc/sys/fs/inotify/max_user_watches', 'utf8').then((t) => t.trim(), () => '?');
  return [
    `cpus: ${os.availableParallelism()} × ${os.cpus()[0]?.model ?? 'unknown'}`,
    `memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `node ${process.version}, ${os.type()} ${os.release()}`,
    `filesystem under bench/out: ${df[1] ?? '?'} on ${df[0] ?? '?'} (df -T)`,
    `fs.inotify.max_user_watches: ${inotify}`,
    `load average at start: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`,
  ];
}
