/**
 * The swarm's floor: one agent of bench/lib/swarm.ts's ask-and-answer plan
 * with nothing of p-e-relay in it. No MCP, no JSON-RPC over a pipe, no index,
 * no digest: a bare fs.watch on the corpus directory, a readFileSync of each
 * new name and a look at its header lines, and an answer or a question
 * published the way the store publishes (temp file, fsync, link() to the
 * next free id, fsync of the directory). What twenty of these take per
 * question on this machine is the cost of "every process is woken by, and
 * reads, every record", which no store can go below.
 *
 * argv: corpus, agent number, agents, questions each. Sends `ready`, waits
 * for `go`, sends `done` with its ask → answer latencies (ms).
 */
import { closeSync, constants, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, watch, writeSync } from 'node:fs';
import path from 'node:path';
import { agentName, peerOf } from '../lib/swarm.js';
import { nowMs } from '../lib/stats.js';
import { on, send } from './ipc.js';

const [corpus, iText, nText, qText] = process.argv.slice(2) as [string, string, string, string];
const [i, n, questionsEach] = [Number(iText), Number(nText), Number(qText)];
const me = agentName(i);
const tmp = path.join(corpus, '.state', 'tmp');
mkdirSync(tmp, { recursive: true });
let incoming = 0;
for (let a = 0; a < n; a++) for (let q = 0; q < questionsEach; q++) if (peerOf(a, q, n) === i) incoming++;

let highest = 0;
let seq = 0;
let asked = 0;
let answeredTheirs = 0;
const askedAt = new Map<string, number>();
const latencies: number[] = [];
const dirFd = openSync(corpus, constants.O_RDONLY | constants.O_DIRECTORY);
const format = (id: number) => `relay-${String(id).padStart(4, '0')}`;

function publish(bytes: string): string {
  const temp = path.join(tmp, `floor-${process.pid}-${seq++}`);
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o444);
  writeSync(fd, bytes);
  fsyncSync(fd);
  closeSync(fd);
  try {
    for (let id = highest + 1; ; id++) {
      try {
        linkSync(temp, path.join(corpus, format(id)));
        highest = Math.max(highest, id);
        fsyncSync(dirFd);
        return format(id);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
  } finally {
    unlinkSync(temp);
  }
}

function ask(): void {
  const t0 = nowMs();
  const id = publish(`@p-e/x0\nkind: question\nfrom: ${me}\nto: ${agentName(peerOf(i, asked, n))}\n\nquestion ${asked} from ${me}\n`);
  askedAt.set(id, t0);
  asked++;
}

function header(text: string, key: string): string | null {
  const at = text.indexOf(`\n${key}: `);
  if (at === -1) return null;
  const end = text.indexOf('\n', at + key.length + 3);
  return text.slice(at + key.length + 3, end);
}

function finishedIfDone(): void {
  if (latencies.length === questionsEach && answeredTheirs === incoming) send({ type: 'done', latencies });
}

watch(corpus, (_event, name) => {
  if (typeof name !== 'string' || !name.startsWith('relay-')) return;
  const id = Number(name.slice(6));
  if (id > highest) highest = id;
  let text: string;
  try {
    text = readFileSync(path.join(corpus, name), 'utf8');
  } catch {
    return;
  }
  if (header(text, 'to') !== me) return;
  const kind = header(text, 'kind');
  if (kind === 'question') {
    publish(`@p-e/x0\nkind: answer\nfrom: ${me}\nto: ${header(text, 'from')}\nparent: ${name}\n\nanswer to ${name}\n`);
    answeredTheirs++;
  } else if (kind === 'answer') {
    const parent = header(text, 'parent');
    const t0 = parent === null ? undefined : askedAt.get(parent);
    if (t0 === undefined) return;
    latencies.push(nowMs() - t0);
    askedAt.delete(parent!);
    if (asked < questionsEach) ask();
  }
  finishedIfDone();
});

on('go', () => {
  ask();
  finishedIfDone();
});
send({ type: 'ready' });
