/**
 * Preparing a store: is the corpus there, is it a store, how wide are its
 * ids, is it a mirror. Opening it: learn the filesystem, take a turn at the first index
 * snapshot, read the issued log and the snapshot, start hearing, scan.
 * And what to do when the corpus path comes to name another directory.
 */
import fs from 'node:fs/promises';
import { RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { idShape, type IdShape } from '../model/ids.js';
import type { RecordIndex } from '../model/record-index.js';
import type { CorpusPaths } from '../disk/paths.js';
import type { DirectorySync } from '../disk/publish.js';
import { corpusPaths } from '../disk/paths.js';
import { readSettings } from '../disk/settings.js';
import { readStateText } from '../disk/state-file.js';
import type { IssuedLog } from './append/issued-log.js';
import type { CorpusFacts } from './corpus-facts.js';
import type { Visibility } from './follow/visibility.js';
import type { Bells } from './hear/bells.js';
import type { Interests } from './hear/interest.js';
import type { Peers } from './hear/peers.js';
import type { CorpusWatcher } from './hear/watch.js';
import type { CorpusIndexer } from './index/corpus-indexer.js';
import type { SnapshotKeeper } from './index/snapshot-keeper.js';
import type { Lifecycle } from './lifecycle.js';
import { ensureStore } from './store-mark.js';
import type { StoreOptions } from './store-options.js';

/** Checks the corpus is there and reads its settings; cheap, and enough to describe the tools. */
export async function prepare(options: StoreOptions): Promise<{ options: StoreOptions; shape: IdShape }> {
  const paths = corpusPaths(options.corpus);
  try {
    if (!(await fs.stat(paths.corpus)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new RelayError('no_corpus', `There is no corpus directory at ${paths.corpus}. Create one with \`p-e-relay init --corpus ` +
      `${paths.corpus}\`, or pass --corpus with the path of an existing one.`);
  }
  await ensureStore(paths.corpus, options.readOnly === true); // any directory is not a corpus (store-mark.ts)
  const settings = await readSettings(paths.corpus);
  // A corpus that `mirror` fills has one writer, rsync; a local append would
  // shadow the primary's record of the same id forever.
  // A mark that is no small regular file (a FIFO, a symlink) still marks a mirror: it is read as one that names no primary.
  const mark = await readStateText(paths.mirrorMark);
  const mirrorOf = mark === null ? null : (typeof mark === 'string' ? mark.trim() : '') || 'the primary';
  if (mirrorOf !== null) options = { ...options, readOnly: true, primary: options.primary ?? mirrorOf };
  return { options, shape: idShape(settings.idWidth) };
}

export interface OpeningParts {
  life: Lifecycle;
  paths: CorpusPaths;
  readOnly: boolean;
  /** Listeners filtered on to/replies_to may hear by bells (decided with the filesystem's facts). */
  wantBells: boolean;
  buildWait: { maxWaitMs?: number; staleMs?: number };
  facts: CorpusFacts;
  index: RecordIndex;
  indexer: CorpusIndexer;
  issued: IssuedLog;
  snapshots: SnapshotKeeper;
  watcher: CorpusWatcher;
  interests: Interests;
  peers: Peers;
  visibility: Visibility;
  bells: Bells | null;
  dirSync: DirectorySync;
  /** Notes in the roster the abouts its records state that it lacks (agents/abouts.ts). */
  rebuildAbouts: () => Promise<number>;
  log: Logger;
}

export async function load(w: OpeningParts): Promise<void> {
  const { life, paths, index } = w;
  const facts = await w.facts.learn(w.watcher.intervalMsWhenShared);
  if (!w.readOnly) await fs.mkdir(paths.tmp, { recursive: true });
  // A swarm starting on a corpus with no snapshot: one process reads every
  // record, the others wait for its snapshot; so before the issued log is read,
  // which that process notes the corpus's highest id in (snapshot-build.ts).
  await w.snapshots.takeTurn(async () => (await w.indexer.idsOnDisk()).length, () => life.state !== 'opening', w.buildWait);
  life.refuseIfClosed();
  const issuedBefore = await w.issued.read();
  index.noteIssued(issuedBefore);
  life.refuseIfClosed();
  // What a process before this one read, if it left a snapshot that holds
  // together; the scan then reads only what the snapshot lacks.
  const snapshot = await w.snapshots.load();
  life.refuseIfClosed();
  // Start watching before the scan so that nothing landing during it is missed;
  // whatever both see is indexed once. Where bells serve, records landing
  // during the scan are in the issued log, read after it (peers.ts).
  w.interests.start(w.wantBells && !facts.shared, facts.shared);
  const scan = await w.indexer.scan(snapshot);
  w.visibility.scanDone();
  w.peers.start();
  life.refuseIfClosed();
  w.peers.hear();
  // Records brought by rsync or git are in no process's issued log; note the
  // highest now, so that if it vanishes later its id is still never reused.
  if (!w.readOnly && index.highest > issuedBefore) w.issued.note(index.highest);
  w.snapshots.afterScan(scan);
  // A clone, a mirror or a lost .state/ has no roster of its own: each agent's about comes back from its record.
  await w.rebuildAbouts().catch((err: Error) => w.log.warn(`cannot read the abouts back into the roster: ${err.message}`));
  life.refuseIfClosed();
  const read = snapshot.loaded ? `snapshot, then ${scan.read} read and ${scan.dropped} dropped` : `${scan.read} read`;
  w.log.debug(`indexed ${index.size} records from ${paths.corpus} (${read})`);
}

/**
 * The corpus path now names another directory (deleted and restored, or
 * re-cloned without .state/): sync and log into the new one, recreate its
 * temp directory, and carry the high-water mark over so that no id issued
 * here is handed out again by any process.
 */
export async function reattach(w: OpeningParts): Promise<void> {
  w.dirSync.reopen();
  w.issued.reopen();
  w.bells?.rearmAll();
  if (w.readOnly || w.life.state !== 'open') return;
  try {
    await fs.mkdir(w.paths.tmp, { recursive: true });
  } catch (err) {
    w.log.warn(`cannot create ${w.paths.tmp} in the new corpus directory (${(err as Error).message}); appends will be refused until it can be`);
  }
  if (w.index.highest > 0) w.issued.note(w.index.highest);
}
