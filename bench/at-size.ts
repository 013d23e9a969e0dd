/**
 * The bench's cached corpora at work, one part at a time, for the figures at
 * size that are not rates: every tool over stdio, the web view's list in
 * headless Chromium, and `mirror` (rsync). Appends go to a hard-linked copy:
 * the cached corpus stays as generated, for others to read.
 *
 *   npm run build
 *   node --import tsx bench/at-size.ts tools  [--size 1000000]
 *   node --import tsx bench/at-size.ts web    [--size 1000000]
 *   node --import tsx bench/at-size.ts mirror [--size 1000000]
 *   node --import tsx bench/at-size.ts doors  [--size 1000000]
 *
 * `doors` is a catch-up from the very start through each door that follows
 * the store: GET /events read at full speed and by a reader that stops for
 * a few seconds (backpressure), the CLI's one-shot `wait`, `tail -n 10` and
 * `tail -n 10 -f`; with each, the peak resident memory of the process that
 * answers.
 *
 * Each prints wall time, the CPU-seconds of the processes involved (from
 * /proc or getrusage) and the load average beside them: the machine is shared.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import http from 'node:http';
import { chromium } from 'playwright-core';
import { authorizationFor } from '../lib/auth/sign.js';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { cachedCorpus, copyCorpus, ensureSnapshot, type Corpus } from './lib/corpus.js';
import { BENCH_OUT, BIN } from './lib/paths.js';
import { cpuMsOf, footprint, relayServer } from './lib/procs.js';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { size: { type: 'string', default: '1000000' } } });
const size = Number(values.size);
const width = size >= 1_000_000 ? 7 : 6;
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const say = (line: string) => process.stdout.write(`${line}\n`);
/** The page's document, typed for the predicates below (they run in the page: no closures, no eval under its CSP). */
type PageGlobal = { document: { querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>; getElementById(id: string): { textContent: string | null } | null } };
const idOf = (n: number) => 'relay-' + String(n).padStart(width, '0');

async function timed<T>(label: string, pid: number, fn: () => Promise<T>): Promise<T> {
  const cpu0 = await cpuMsOf(pid);
  const t0 = performance.now();
  const out = await fn();
  const ms = performance.now() - t0;
  const cpu = await cpuMsOf(pid).then((x) => `${(x - cpu0).toFixed(0)} CPU-ms`, () => 'gone');
  say(`  ${label}: ${ms.toFixed(0)} ms, server ${cpu} (load ${load()})`);
  return out;
}

async function tools(source: Corpus): Promise<void> {
  const into = await fs.mkdtemp(path.join(BENCH_OUT, 'at-size-'));
  const copy = await copyCorpus(source, into);
  try {
    const t0 = performance.now();
    const server = await relayServer(copy.corpus);
    const call = async (name: string, args: Record<string, unknown>) => (await server.client.callTool({ name, arguments: args }, { timeout: 300_000 })) as CallToolResult;
    const first = await timed('spawn → first exists', server.pid, () => call('exists', { id: idOf(size) }));
    say(`    (${(performance.now() - t0).toFixed(0)} ms from spawn) ${(first.content[0] as { text: string }).text}; RSS ${(await footprint(server.pid)).rssMb.toFixed(0)} MB`);
    const got = await timed('get_relay of the oldest', server.pid, () => call('get_relay', { id: idOf(1) }));
    say(`    isError ${got.isError ?? false}`);
    const replies = await timed('list_replies of the oldest', server.pid, () => call('list_replies', { id: idOf(1) }));
    say(`    ${(replies.structuredContent as { replies: unknown[] }).replies.length} replies`);
    const whole = await timed('list_relays, whole store', server.pid, () => call('list_relays', {}));
    const meta = (whole._meta as Record<string, { code?: string; after?: string; ids?: number }> | undefined)?.['p-e-relay/error'];
    say(`    isError ${whole.isError ?? false}, code ${meta?.code}, ids ${meta?.ids}, after ${meta?.after}`);
    if (meta?.after) {
      const page = await timed(`list_relays after ${meta.after}`, server.pid, () => call('list_relays', { after: meta.after }));
      const s = page.structuredContent as { present: string[]; knownMissing: string[] };
      say(`    ${s.present.length} present, ${s.knownMissing.length} known missing, ${(JSON.stringify(page).length / 1e6).toFixed(1)} MB as JSON`);
    }
    const filtered = await timed('list_relays from: agent-3', server.pid, () => call('list_relays', { from: 'agent-3' }));
    say(`    isError ${filtered.isError ?? false}`);
    const appended = await timed('append_relay', server.pid, () => call('append_relay', { bytes: '@p-e/x0\nkind: note\nfrom: at-size\n\nhello at a million\n' }));
    const id = (appended.structuredContent as { id: string }).id;
    say(`    ${id}`);
    const caught = await timed(`wait_for_relay after ${idOf(size - 10)}`, server.pid, () => call('wait_for_relay', { after: idOf(size - 10), timeout_ms: 1000 }));
    say(`    ${(caught.structuredContent as { appeared: unknown[] }).appeared.length} appeared`);
    const fromStart = await timed(`wait_for_relay after ${idOf(0)}`, server.pid, () => call('wait_for_relay', { after: idOf(0), timeout_ms: 1000 }).catch((err: Error) => ({ failed: err.message })));
    say(`    ${'failed' in fromStart ? `failed: ${fromStart.failed}` : `${(fromStart.structuredContent as { appeared: unknown[] }).appeared.length} appeared, cursor ${(fromStart.structuredContent as { cursor: string }).cursor}, ${(JSON.stringify(fromStart).length / 1e6).toFixed(1)} MB as JSON`}`);
    say(`    server RSS after: ${(await footprint(server.pid)).rssMb.toFixed(0)} MB`);
    await server.close().catch(() => {});
  } finally {
    await fs.rm(into, { recursive: true, force: true });
  }
}

/** A hub on the corpus (read-only: nothing is appended) and the page in headless Chromium. */
async function web(source: Corpus): Promise<void> {
  const child = spawn(process.execPath, [BIN, 'serve', '--http', '--port', '0', '--read-only', '--primary', 'none', '--corpus', source.corpus, '--keys', source.keys], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'info' } });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      const m = /serving (http:\/\/\S+) \(/.exec(stderr);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error(`the hub exited: ${stderr}`)));
  });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    const cpu0 = await cpuMsOf(child.pid!);
    const t0 = performance.now();
    await page.goto(url);
    await page.waitForFunction(() => {
      const { document } = globalThis as unknown as PageGlobal;
      return document.querySelectorAll('#feed-rows tr').length >= 100 && /held records shown/.test(document.getElementById('count')?.textContent ?? '');
    }, undefined, { timeout: 120_000 });
    const firstMs = performance.now() - t0;
    const filled = await page.waitForFunction(() => {
      const rows = Array.from((globalThis as unknown as PageGlobal).document.querySelectorAll('#feed-rows tr'));
      return rows.length >= 100 && !rows.some((tr) => (tr.textContent ?? '').includes('…'));
    }, undefined, { timeout: 120_000 }).then(() => performance.now() - t0, () => NaN);
    const rows = await page.locator('#feed-rows tr').count();
    const count = await page.locator('#count').textContent();
    say(`  page load → ${rows} rows and "${count}": ${firstMs.toFixed(0)} ms (rows filled by ${filled.toFixed(0)} ms); hub ${((await cpuMsOf(child.pid!)) - cpu0).toFixed(0)} CPU-ms (load ${load()})`);
    const t1 = performance.now();
    await page.click('#older');
    await page.waitForFunction(() => (globalThis as unknown as PageGlobal).document.querySelectorAll('#feed-rows tr').length >= 200, undefined, { timeout: 60_000 });
    say(`  "Show older records" → ${await page.locator('#feed-rows tr').count()} rows: ${(performance.now() - t1).toFixed(0)} ms`);
    const heap = await page.evaluate(() => (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? NaN);
    say(`  page JS heap ${(heap / 1e6).toFixed(0)} MB; hub RSS ${(await footprint(child.pid!)).rssMb.toFixed(0)} MB; page errors: ${errors.length ? errors.join('; ') : 'none'}`);
  } finally {
    await browser.close();
    child.kill('SIGTERM');
  }
}

async function mirror(source: Corpus): Promise<void> {
  const dir = await fs.mkdtemp(path.join(BENCH_OUT, 'mirror-'));
  const target = path.join(dir, 'corpus');
  try {
    for (const round of ['first fill', 'again, nothing new']) {
      const t0 = performance.now();
      const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, 'mirror', source.corpus, '--corpus', target], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'warn' } });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.once('exit', (code) => resolve({ code, stdout, stderr }));
      });
      const ms = performance.now() - t0;
      const children = await childrenCpu();
      say(`  mirror, ${round}: exit ${out.code}, ${ms.toFixed(0)} ms; ${out.stdout.slice(0, 40).trim()}…; children so far ${children} (load ${load()})`);
      if (out.code !== 0) say(out.stderr.slice(-2000));
    }
    const held = (await fs.readdir(target)).filter((n) => n.startsWith('relay-')).length;
    say(`  mirror holds ${held} records`);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** The highest VmRSS of a process while `during` runs, sampled every 20 ms (MB). */
async function peakRss<T>(pid: number, during: () => Promise<T>): Promise<{ out: T; peakMb: number }> {
  let peakKb = 0;
  const sample = async () => {
    const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    peakKb = Math.max(peakKb, Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0));
  };
  await sample();
  const timer = setInterval(() => void sample(), 20);
  try {
    const out = await during();
    await sample();
    return { out, peakMb: peakKb / 1024 };
  } finally {
    clearInterval(timer);
  }
}

/** Counts events in an SSE body without keeping it. */
function eventCounter(): { feed(chunk: Buffer): void; readonly events: number; readonly bytes: number; readonly lastId: string } {
  let tail = '';
  let events = 0;
  let bytes = 0;
  let lastId = '';
  return {
    feed(chunk) {
      bytes += chunk.length;
      // Only whole events are counted; the rest waits for the next chunk.
      const text = tail + chunk.toString('latin1');
      const cut = text.lastIndexOf('\n\n');
      if (cut === -1) return void (tail = text);
      for (const m of text.slice(0, cut + 1).matchAll(/(?:^|\n)id: (relay-\d+)\n/g)) {
        events++;
        lastId = m[1]!;
      }
      tail = text.slice(cut + 1);
    },
    get events() { return events; },
    get bytes() { return bytes; },
    get lastId() { return lastId; },
  };
}

/** The CLI the doors part runs: this checkout's, or AT_SIZE_BIN (another build's bin/p-e-relay, for a before/after in one run). */
const DOORS_BIN = process.env.AT_SIZE_BIN ?? BIN;

/** A catch-up from the start through each door that follows the store, on a hard-linked copy (the guard and marks write .state/). */
async function doors(source: Corpus): Promise<void> {
  const into = await fs.mkdtemp(path.join(BENCH_OUT, 'at-size-'));
  const copy = await copyCorpus(source, into);
  const keys = path.join(into, 'keys');
  try {
    await runBin(['keys', 'add', 'bench', '--keys', keys]);
    const key = Buffer.from((await fs.readFile(path.join(keys, 'bench.key'), 'utf8')).trim());
    // DOORS_BIN itself, as users run it: its shebang's node flags apply.
    const [command, ...argv] = [...hubCommand(), 'serve', '--http', '--port', '0', '--read-only', '--primary', 'none', '--corpus', copy.corpus, '--keys', keys];
    const hub = spawn(command!, argv, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'info' } });
    try {
      let stderr = '';
      const url = new URL(await new Promise<string>((resolve, reject) => {
        hub.stderr.setEncoding('utf8').on('data', (d: string) => {
          stderr += d;
          const m = /serving (http:\/\/\S+) \(/.exec(stderr);
          if (m) resolve(m[1]!);
        });
        hub.once('exit', () => reject(new Error(`the hub exited: ${stderr}`)));
      }));
      // The first request opens the store (snapshot, listing): not part of the stream's cost.
      await fetch(new URL('/relays/' + idOf(1), url)).then((r) => r.arrayBuffer());
      const events = (pauseMs: number) =>
        new Promise<{ events: number; bytes: number; lastId: string; pausedCpuMs: number; pausedRssMb: number }>((resolve, reject) => {
          const counter = eventCounter();
          const req = http.get(new URL(`/events?after=${idOf(0)}`, url), { headers: { Authorization: authorizationFor('bench', key, 'GET', new Uint8Array()) } }, (res) => {
            if (res.statusCode !== 200) return reject(new Error(`GET /events: ${res.statusCode}`));
            let pausedCpuMs = 0;
            let pausedRssMb = 0;
            const done = () => counter.events >= size;
            res.on('data', (chunk: Buffer) => {
              counter.feed(chunk);
              if (done()) {
                res.destroy();
                resolve({ events: counter.events, bytes: counter.bytes, lastId: counter.lastId, pausedCpuMs, pausedRssMb });
              }
            });
            if (pauseMs > 0) {
              // Stop reading at once: with backpressure the hub stops too, and neither its CPU nor its memory grows.
              res.pause();
              void (async () => {
                await new Promise((r) => setTimeout(r, 500)); // let the socket buffers fill
                const cpu0 = await cpuMsOf(hub.pid!);
                await new Promise((r) => setTimeout(r, pauseMs));
                pausedCpuMs = (await cpuMsOf(hub.pid!)) - cpu0;
                pausedRssMb = (await footprint(hub.pid!)).rssMb;
                say(`    paused ${pauseMs} ms after ${counter.events} events: hub ${pausedCpuMs} CPU-ms meanwhile, RSS ${pausedRssMb.toFixed(0)} MB`);
                res.resume();
              })();
            }
          });
          req.on('error', reject);
        });
      const idle0 = await cpuMsOf(hub.pid!);
      await new Promise((r) => setTimeout(r, 3000));
      say(`  hub RSS before: ${(await footprint(hub.pid!)).rssMb.toFixed(0)} MB; idle for 3000 ms: ${(await cpuMsOf(hub.pid!)) - idle0} CPU-ms (its reconcile listing)`);
      for (const pauseMs of [0, 3000]) {
        const { out, peakMb } = await peakRss(hub.pid!, () => timed(`GET /events?after=${idOf(0)}${pauseMs ? `, reader paused ${pauseMs} ms` : ''}`, hub.pid!, () => events(pauseMs)));
        say(`    ${out.events} events (last ${out.lastId}), ${(out.bytes / 1e6).toFixed(1)} MB; hub peak RSS ${peakMb.toFixed(0)} MB`);
      }
    } finally {
      hub.kill('SIGTERM');
    }
    for (const args of [['wait', '--after', idOf(0), '--timeout', '0'], ['tail', '-n', '10']]) {
      const r = await runBin([...args, '--corpus', copy.corpus], true);
      say(`  p-e-relay ${args.join(' ')}: exit ${r.code}, ${r.lines} lines / ${(r.bytes / 1e6).toFixed(1)} MB on stdout; ${r.time} (load ${load()})${r.note ? `\n    stderr: ${r.note}` : ''}`);
    }
    // tail -f: the newest 10, then it follows; its memory once they are out.
    const follow = spawn(DOORS_BIN, ['tail', '-n', '10', '-f', '--corpus', copy.corpus], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, P_E_RELAY_LOG: 'warn' } });
    const t0 = performance.now();
    let lines = 0;
    await new Promise<void>((resolve) => follow.stdout.on('data', (d: Buffer) => {
      lines += d.toString().split('\n').length - 1;
      if (lines >= 10) resolve();
    }));
    const ms = performance.now() - t0;
    const fp = await footprint(follow.pid!);
    say(`  p-e-relay tail -n 10 -f: 10 lines in ${ms.toFixed(0)} ms, ${(fp.cpuS * 1000).toFixed(0)} CPU-ms, RSS ${fp.rssMb.toFixed(0)} MB while following (load ${load()})`);
    follow.kill('SIGTERM');
  } finally {
    await fs.rm(into, { recursive: true, force: true });
  }
}

/**
 * How the hub is started: DOORS_BIN, or with AT_SIZE_HUB_PROFILE=DIR node with the
 * shebang's flags and --cpu-prof into DIR (node refuses it in NODE_OPTIONS).
 */
function hubCommand(): string[] {
  const dir = process.env.AT_SIZE_HUB_PROFILE;
  const shebang = /^#!.*?node (.*)$/m.exec(readFileSync(DOORS_BIN, 'utf8'))![1]!.split(' ');
  return dir ? [process.execPath, ...shebang, '--cpu-prof', `--cpu-prof-dir=${dir}`, DOORS_BIN] : [DOORS_BIN];
}

/** Runs the CLI (under /usr/bin/time when `timed`), counting its stdout without keeping it. */
async function runBin(args: string[], timed = false): Promise<{ code: number | null; lines: number; bytes: number; time: string; note: string }> {
  const argv = timed ? ['/usr/bin/time', '-f', 'TIME %e s wall, %U s user + %S s sys, max RSS %M KB', DOORS_BIN, ...args] : [DOORS_BIN, ...args];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, P_E_RELAY_LOG: 'warn' } });
  let lines = 0;
  let bytes = 0;
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    bytes += d.length;
    for (const c of d) if (c === 10) lines++;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const time = /^TIME (.*)$/m.exec(stderr)?.[1] ?? '';
  const note = stderr.replace(/^TIME .*\n?/m, '').trim().slice(0, 300);
  return { code, lines, bytes, time, note };
}

/** CPU of waited-for children (the CLI and its rsync), from /proc/self/stat's cutime + cstime. */
async function childrenCpu(): Promise<string> {
  const stat = (await fs.readFile('/proc/self/stat', 'utf8')).split(') ')[1]!.split(' ');
  return `${((Number(stat[13]) + Number(stat[14])) / 100).toFixed(1)} CPU-s`;
}

const part = positionals[0];
const source = await cachedCorpus(size, width, say);
await ensureSnapshot(source.corpus);
say(`${part} on ${size.toLocaleString('en-US')} records (${source.corpus}); load ${load()}`);
if (part === 'tools') await tools(source);
else if (part === 'web') await web(source);
else if (part === 'mirror') await mirror(source);
else if (part === 'doors') await doors(source);
else throw new Error('usage: at-size.ts tools|web|mirror|doors [--size N]');
