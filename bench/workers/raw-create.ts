/**
 * The file-creation ceiling: the durable publish an append must do, with
 * nothing else around it — write a temp file, fsync it, link() it to its
 * name, unlink the temp name, fsync the directory — serially, as fast as one
 * process can. Several of these in one directory give the multi-process ceiling.
 */
import { constants as fsc } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { nowMs } from '../lib/stats.js';
import { on, send } from './ipc.js';

const [dir, tag] = process.argv.slice(2) as [string, string];
const tmp = path.join(dir, '.state', 'tmp');
await fs.mkdir(tmp, { recursive: true });
const dirHandle = await fs.open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
const bytes = Buffer.alloc(420, 'x');
let seq = 0;

async function createOne(): Promise<void> {
  const n = seq++;
  const temp = path.join(tmp, `${tag}-${n}.tmp`);
  const handle = await fs.open(temp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o444);
  await handle.write(bytes);
  await handle.sync();
  await handle.close();
  await fs.link(temp, path.join(dir, `${tag}-${n}`));
  await fs.unlink(temp);
  await dirHandle.sync();
}

on('go', async ({ ms }) => {
  const start = nowMs();
  let count = 0;
  while (nowMs() - start < ms) {
    await createOne();
    count++;
  }
  send({ type: 'done', count, start, end: nowMs() });
});
send({ type: 'ready' });
