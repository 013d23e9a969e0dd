/**
 * Re-checking a whole corpus from disk, independent of any running server:
 * every record's digest, and the temp files a crash can leave behind.
 *
 * Records are read with synchronous calls, a batch at a time between turns of
 * the event loop: a record is a few hundred bytes, so the four promise round
 * trips of an async open/stat/read/close (through libuv's thread pool) cost
 * twenty times the syscalls and the hash together. Measured on the 1M corpus
 * from the page cache: ~0.28 CPU-ms a record async, ~0.015 sync
 * (docs/performance-tables.md). The turns between batches let progress
 * reach stderr and a ^C land.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { listRecordIds } from '../disk/record-names.js';
import { splitRecordFile, type SplitFile } from '../model/deposit.js';
import { RelayError } from '../errors.js';
import { idShape } from '../model/ids.js';
import { corpusPaths } from '../disk/paths.js';
import { judgeTemp } from '../disk/stray-temps.js';
import { readRecordFileSync } from '../disk/record-file.js';
import { readSettings } from '../disk/settings.js';
import { CheckpointAudit, type CheckpointFindings } from './verify-checkpoints.js';
import { StateAudit, type StateFindings } from './verify-state.js';

export interface VerifyReport {
  checked: number;
  damaged: { id: string; why: string }[];
  /** Temp files whose writer is gone: safe to remove. */
  stray: string[];
  /** Temp files a live process of this host may still be writing. */
  live: string[];
  /**
   * Temp files made on another host sharing this corpus: whether their writer
   * lives cannot be told from here, so they are reported and left alone. Run
   * `verify --clean` on that host to remove its strays.
   */
  foreign: { name: string; host: string }[];
  removed: string[];
  /** What the checkpoints among the records prove, or name as missing, altered or forked (verify-checkpoints.ts). */
  checkpoints: CheckpointFindings;
  /** `.state/index` and `.state/issued` against the records (verify-state.ts). */
  state: StateFindings;
}

/** Records read between two turns of the event loop (a few tens of ms). */
const BATCH = 2_000;

export interface VerifyOptions {
  clean?: boolean;
  /** Where the hub's key is looked for to check checkpoint signatures (keys/<name>.key); without it they are not checked. */
  keysDir?: string;
  /** The one key checkpoint signatures are checked with (default hub): keys/<name>.key. */
  checkpointKey?: string;
  /** The key was named (`verify --checkpoint-key`): only checkpoints it signed prove the copy complete, key file at hand or not. */
  checkpointKeyNamed?: boolean;
  /** Called after each batch of records read, and once at the end (done === total). */
  onProgress?: (done: number, total: number) => void;
}

export async function verifyCorpus(corpusDir: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const paths = corpusPaths(corpusDir);
  const shape = idShape((await readSettings(paths.corpus)).idWidth);
  let numbers: number[];
  try {
    numbers = await listRecordIds(paths.corpus, shape);
  } catch {
    throw new RelayError('no_corpus', `There is no corpus directory at ${paths.corpus}. Pass --corpus with the path of one.`);
  }
  const ids = numbers.sort((a, b) => a - b).map(shape.format);
  const checkpoints = new CheckpointAudit(numbers, shape, options.keysDir ?? null, options.checkpointKey, options.checkpointKeyNamed === true);
  const state = await StateAudit.open(paths, shape);
  const report: Omit<VerifyReport, 'checkpoints' | 'state'> = { checked: 0, damaged: [], stray: [], live: [], foreign: [], removed: [] };
  for (const [at, id] of ids.entries()) {
    let whole: SplitFile | null = null;
    try {
      whole = splitRecordFile(readRecordFileSync(paths.record(id))); // never blocks on a FIFO named like a record
    } catch (err) {
      const why = err instanceof RelayError ? String(err.details.why ?? err.message) : (err as Error).message;
      report.damaged.push({ id, why });
    }
    if (whole) {
      state.see(numbers[at]!, whole.deposit, whole.record);
      const checking = checkpoints.see(at, whole.deposit, whole.record);
      if (checking) await checking;
    }
    report.checked++;
    if (report.checked % BATCH === 0 && report.checked < ids.length) {
      options.onProgress?.(report.checked, ids.length);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  options.onProgress?.(report.checked, ids.length);

  let temps: string[] = [];
  try {
    temps = await fs.readdir(paths.tmp);
  } catch {
    // no .state/tmp: nothing was ever written here, or it is a fresh clone
  }
  for (const name of temps) {
    const verdict = judgeTemp(name, false);
    if (verdict.kind === 'foreign') {
      report.foreign.push({ name, host: verdict.host });
      continue;
    }
    if (verdict.kind === 'live') {
      report.live.push(name);
      continue;
    }
    report.stray.push(name);
    if (options.clean) {
      await fs.unlink(path.join(paths.tmp, name)).catch(() => {});
      report.removed.push(name);
    }
  }
  return { ...report, checkpoints: checkpoints.finish(), state: await state.finish(numbers) };
}
