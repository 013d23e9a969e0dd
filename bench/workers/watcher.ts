/**
 * The wake ceiling: a bare fs.watch on a directory in its own process,
 * reporting when each name's event arrives, on the monotonic clock every
 * process on the machine shares.
 */
import { watch } from 'node:fs';
import { nowMs } from '../lib/stats.js';
import { send } from './ipc.js';

const [dir] = process.argv.slice(2) as [string];
const seen = new Set<string>();
watch(dir, (_event, name) => {
  const t = nowMs();
  if (typeof name !== 'string' || seen.has(name)) return;
  seen.add(name);
  send({ type: 'event', name, t });
});
send({ type: 'ready' });
