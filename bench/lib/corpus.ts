/**
 * Corpora for the bench, written straight to disk with the store's own
 * buildRecordFile (the same bytes an append would write, digests included),
 * which is ~50× faster than appending them one by one. Generated corpora are
 * cached under bench/out/ and reused while the generator and the deposit
 * format are unchanged; a bench that appends works on a hard-linked copy
 * (records are immutable, so sharing their inodes is safe).
 *
 * A million records (`init --id-width 7`) take about 4 GB of disk (a 4 KiB
 * block each) and a minute or two to write, once: each file is written with
 * one synchronous call and no fsync (the cache is rebuilt if it is ever
 * incomplete: the stamp is written last).
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { writeFileSync } from 'node:fs';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { initStore } from '../../lib/ops/init.js';
import { decodeSnapshot } from '../../lib/store/index/index-snapshot.js';
import { SNAPSHOT_MIN_RECORDS } from '../../lib/store/index/snapshot-keeper.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { readSettings } from '../../lib/disk/settings.js';
import { openStore } from '../../lib/store/store.js';
import { BENCH_OUT, ROOT } from './paths.js';

const run = promisify(execFile);
const GENERATOR = 'corpus-v1';
const STAMP = '.bench-complete';
const START = Date.parse('2026-11-01T00:00:00.000Z');

export interface Corpus {
  corpus: string;
  keys: string;
  size: number;
  width: number;
}

/** A deterministic agent conversation: notes, replies to earlier records, a few refs. */
export function benchRecord(i: number, width: number, random: () => number): string {
  const shape = idShape(width);
  const lines = ['@p-e/x0'];
  const reply = i > 1 && random() < 0.5;
  lines.push(`kind: ${reply ? 'reply' : 'note'}`, `from: agent-${i % 20}`, `to: agent-${(i + 7) % 20}`);
  if (reply) lines.push(`parent: ${shape.format(1 + Math.floor(random() * (i - 1)))}`);
  if (i > 10 && random() < 0.1) lines.push(`ref: ${shape.format(1 + Math.floor(random() * (i - 1)))} ${shape.format(1 + Math.floor(random() * (i - 1)))}`);
  lines.push('', `Record ${i}. ${'The swarm reports progress on its part of the task and asks for review. '.repeat(3)}`);
  return lines.join('\n');
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * What a cached corpus was made with: the bytes this code writes for a few
 * sample records, hashed. A change to how records or deposit headers are
 * written changes the stamp and the corpus is rebuilt; an edit to
 * lib/model/deposit.ts that writes the same bytes (a faster digest, say)
 * does not throw away a million records that others may be reading.
 */
async function stampText(): Promise<string> {
  const hash = createHash('sha256');
  for (const width of [4, 7]) {
    const random = mulberry32(width);
    for (let i = 1; i <= 20; i++) {
      const bytes = Buffer.from(benchRecord(i, width, random), 'utf8');
      hash.update(buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp', depositedAt: new Date(START + i * 1000).toISOString(), digest: digestOf(bytes) }, bytes));
    }
  }
  return `${GENERATOR} ${hash.digest('hex').slice(0, 16)}\n`;
}

/** A cached corpus of `size` records (ids 1…size) in a store of id width `width`. */
export async function cachedCorpus(size: number, width = 4, log = (_: string) => {}): Promise<Corpus> {
  const dir = path.join(BENCH_OUT, 'corpora', `w${width}-${size}`);
  const corpus = path.join(dir, 'corpus');
  const keys = path.join(dir, 'keys');
  const stamp = await stampText();
  if ((await fs.readFile(path.join(corpus, STAMP), 'utf8').catch(() => '')) === stamp) return { corpus, keys, size, width };
  log(`generating a ${size.toLocaleString('en-US')}-record corpus (id width ${width}) under ${path.relative(ROOT, dir)}`);
  // Built beside its final place and renamed in, so a bench and the smoke test
  // generating the same corpus at once never see (or delete) half of one.
  const building = `${dir}.building-${process.pid}`;
  await generate(path.join(building, 'corpus'), path.join(building, 'keys'), size, width, stamp);
  const current = async () => (await fs.readFile(path.join(corpus, STAMP), 'utf8').catch(() => '')) === stamp;
  if (await current()) {
    await fs.rm(building, { recursive: true, force: true }); // someone else finished first; theirs may be in use
    return { corpus, keys, size, width };
  }
  await fs.rm(dir, { recursive: true, force: true });
  await fs.rename(building, dir).catch(async (err) => {
    await fs.rm(building, { recursive: true, force: true });
    if (!(await current())) throw err;
  });
  return { corpus, keys, size, width };
}

async function generate(corpus: string, keys: string, size: number, width: number, stamp: string): Promise<void> {
  await initStore({ corpus, keys, idWidth: width });
  const shape = idShape(width);
  const random = mulberry32(size * 31 + width);
  for (let i = 0; i < size; i++) {
    const bytes = Buffer.from(benchRecord(i + 1, width, random), 'utf8');
    const deposit = { provenance: 'as-received' as const, depositedBy: 'mcp', depositedAt: new Date(START + i * 1000).toISOString(), digest: digestOf(bytes) };
    // Synchronously, one call a file: for a million files the promise
    // round trips of fs.promises cost more than the writes themselves.
    writeFileSync(path.join(corpus, shape.format(i + 1)), buildRecordFile(deposit, bytes), { mode: 0o444 });
    if (i % 20_000 === 19_999) await new Promise((r) => setImmediate(r));
  }
  await fs.writeFile(path.join(corpus, STAMP), stamp);
}

/**
 * A writable copy of a cached corpus: records hard-linked, and of .state/
 * only what a store that had run there would leave (the issued log and the
 * index snapshot, copied), so that the copy's first server does not read a
 * million records first. Removed by `dispose`.
 */
export async function copyCorpus(source: Corpus, into: string): Promise<Corpus & { dispose(): Promise<void> }> {
  // A freshly generated corpus has no snapshot yet: make it once on the
  // source, or every copy's first server reads every record (80 s at 1M).
  if (source.size >= SNAPSHOT_MIN_RECORDS) await ensureSnapshot(source.corpus);
  const dir = await fs.mkdtemp(path.join(into, `w${source.width}-${source.size}-`));
  const corpus = path.join(dir, 'corpus');
  await run('cp', ['-al', source.corpus, corpus]);
  await fs.rm(path.join(corpus, '.state'), { recursive: true, force: true });
  await fs.mkdir(path.join(corpus, '.state', 'tmp'), { recursive: true });
  for (const name of ['index', 'issued']) await fs.copyFile(path.join(source.corpus, '.state', name), path.join(corpus, '.state', name)).catch(() => {});
  // A fresh copy: its signature guard has nothing to forget (lib/auth/guard-memory.ts).
  await fs.mkdir(path.join(corpus, '.state', 'replay'));
  return { corpus, keys: source.keys, size: source.size, width: source.width, dispose: () => fs.rm(dir, { recursive: true, force: true }) };
}

/** A fresh, empty store in a temp dir. */
export async function emptyCorpus(into: string, width = 4): Promise<Corpus & { dispose(): Promise<void> }> {
  const dir = await fs.mkdtemp(path.join(into, 'empty-'));
  const corpus = path.join(dir, 'corpus');
  const keys = path.join(dir, 'keys');
  await initStore({ corpus, keys, idWidth: width });
  return { corpus, keys, size: 0, width, dispose: () => fs.rm(dir, { recursive: true, force: true }) };
}

/**
 * Makes sure the corpus has an index snapshot, as any store that has run on
 * it leaves one (the first start after `rm -rf .state` reads every record and
 * writes it). Returns whether it had to be made.
 */
export async function ensureSnapshot(corpus: string): Promise<boolean> {
  const width = (await readSettings(corpus)).idWidth;
  const file = corpusPaths(corpus).snapshot;
  const ok = await fs.readFile(file).then((bytes) => 'snapshot' in decodeSnapshot(bytes, width), () => false);
  if (ok) return false;
  const store = await openStore({ corpus });
  await store.close();
  return true;
}

/** Removes the index snapshot: the next start reads every record. */
export async function dropSnapshot(corpus: string): Promise<void> {
  await fs.rm(corpusPaths(corpus).snapshot, { force: true });
}
