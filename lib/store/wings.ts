/**
 * The store's parts, each made once and handed the others it needs: the
 * one place that says which wing talks to which. The facade (store.ts)
 * calls them; they never call back into it, save through what it shows
 * them: its typed events, its readiness, and its waits for a named agent's
 * deliveries (agents/deliveries.ts).
 */
import type { EventEmitter } from 'node:events';
import { silentLogger, type Logger } from '../log.js';
import { IdempotencyKeys } from '../model/idempotency-keys.js';
import type { IdShape } from '../model/ids.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../model/record.js';
import type { RecordIndex } from '../model/record-index.js';
import { TempLeftovers } from '../disk/lost-mount.js';
import type { CorpusPaths } from '../disk/paths.js';
import { DirectorySync } from '../disk/publish.js';
import { diskRecords, recordFileStamp, type RecordReader } from '../disk/record-file.js';
import { aboutHeard, rebuildAbouts } from './agents/abouts.js';
import { AgentDeliveries, type DeliveryFeed } from './agents/deliveries.js';
import { Appender } from './append/appender.js';
import { IdAllocator } from './append/id-allocator.js';
import { IdempotencyClaims } from './append/idempotency-claims.js';
import { IssuedLog } from './append/issued-log.js';
import { KeyedAppends } from './append/keyed-append.js';
import { NewRecords } from './append/new-record.js';
import { WorkClaimBook } from './append/work-claims.js';
import { CorpusFacts } from './corpus-facts.js';
import type { RecordFeed, StoreEvents } from './follow/subscription.js';
import { Visibility } from './follow/visibility.js';
import { StoreWaits } from './follow/waits.js';
import { OpenQuestions } from './agents/open-questions.js';
import { Bells } from './hear/bells.js';
import { Interests } from './hear/interest.js';
import { Peers } from './hear/peers.js';
import { Waiters } from './follow/waiters.js';
import { CorpusWatcher } from './hear/watch.js';
import { CorpusIndexer } from './index/corpus-indexer.js';
import { addressedTo } from './index/record-peek.js';
import { SnapshotKeeper } from './index/snapshot-keeper.js';
import { SearchableIndex } from './index/text-index.js';
import { Lifecycle } from './lifecycle.js';
import { reattach } from './opening.js';
import { Listing } from './read/listing.js';
import { DEFAULT_CONCURRENT_READS, ReadGate } from './read/read-gate.js';
import { RecordReads } from './read/records.js';
import type { StoreOptions } from './store-options.js';

/** How often a store lists a corpus other hosts write to, unless --poll says otherwise. */
const SHARED_LISTING_MS = 1000;

/** What the wings are given of the store itself. */
export type StoreFace = EventEmitter<StoreEvents> & DeliveryFeed;

export type Wings = ReturnType<typeof makeWings>;

export function makeWings(store: StoreFace, options: StoreOptions, shape: IdShape, paths: CorpusPaths) {
  const log: Logger = options.log ?? silentLogger;
  const readOnly = options.readOnly ?? false;
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const reader = options.reader ?? diskRecords;
  // The record index, answering the text filter from record files read on the first text query (text-index.ts).
  const index = searchableIndex(shape, paths, reader, maxRecordBytes, options.textIndex, log);
  const keys = new IdempotencyKeys();
  const facts = new CorpusFacts(paths.corpus, readOnly, log);
  const issued = new IssuedLog(paths.issued, shape, log);
  const leftovers = new TempLeftovers(paths.tmp, log);
  const dirSync = new DirectorySync(paths.corpus);
  const agents = new AgentDeliveries(store, { marks: paths.marks, roster: paths.roster }, log);
  const life = new Lifecycle(paths.corpus);
  // The indexer announces through visibility, which asks the indexer what is
  // still being read: the one loop of this wiring, closed below once both exist.
  let visibility: Visibility | undefined;
  let interests: Interests | undefined;
  const indexer = new CorpusIndexer({
    index, shape, paths, log, keys, maxRecordBytes, reader,
    onNews: (n, meta, bytes) => {
      visibility!.announce(n, meta, bytes);
      aboutHeard(n, meta, bytes.record, { shape, roster: agents.roster, log });
    },
    onRemoved: (id) => {
      snapshots.noteChange();
      store.emit('removed', id);
    },
    onSettled: () => visibility!.release(),
    // A peer's record is checked and announced at once only where some listener here may want it, or it is addressed to the agent served.
    wanted: (claims) => interests!.wants(claims) || addressedTo(claims, options.agent),
  });
  const snapshots = new SnapshotKeeper(index, shape, keys, paths, () => issued.highest, log);
  const peers = new Peers({ index, issued, indexer, shape, log });
  const bells = readOnly ? null : new Bells(paths.bells, log, peers.lookPast);
  const watcher = watcherFor(options, paths.corpus, log, indexer, peers, issued, () => void reattach(wings));
  const relist = () => watcher.reconcile().then(() => indexer.settled());
  const into = { tmpDir: paths.tmp, remake: [paths.state, paths.tmp], dirSync, log, stranded: (file: string, err: unknown, creating?: boolean) => leftovers.note(file, err, creating) };
  visibility = new Visibility({ index, indexer, shape, events: store, snapshots });
  const ids = new IdAllocator({ index, indexer, shape, paths, into, issued, bells, peers, visibility, facts, relist });
  const keyed = keyedAppends(options, paths, shape, keys, index, indexer, peers, leftovers, log);
  interests = new Interests({ bells, bellsDir: paths.bells, watcher, peers, log });
  const reads = new RecordReads({ index, indexer, peers, shape, paths, maxRecordBytes, reader, gate: new ReadGate(options.concurrentReads ?? DEFAULT_CONCURRENT_READS) });
  const feed = feedOf(store, index, visibility, interests);
  const waiters = new Waiters(feed);
  const records = new NewRecords({ shape, paths, ids, indexer, visibility, facts });
  const workClaims = new WorkClaimBook({ index, shape, peers, settled: () => indexer.settled(), reads, lockFile: paths.workClaims, log });
  const appender = new Appender({ shape, maxRecordBytes, index, peers, ids, keyed, records, workClaims, agents, roster: agents.roster, strictRecipients: options.strictRecipients ?? false });
  const waits = new StoreWaits({ waiters, visibility, peers, index, indexer, reads, shape });
  const wantBells = (options.bells ?? true) && (options.watch ?? 'events') === 'events' && !readOnly;
  const wings = {
    life, paths, log, readOnly, maxRecordBytes, wantBells, buildWait: options.buildWait ?? {}, index, facts, issued, leftovers, dirSync, agents,
    rebuildAbouts: () => rebuildAbouts({ index, shape, reads, roster: agents.roster, log }),
    indexer, snapshots, peers, bells, watcher, ids, visibility, interests, feed, reads, waiters, appender, waits, workClaims,
    listing: new Listing({ index, shape, paths, agents }), questions: new OpenQuestions({ index, shape }),
  };
  return wings;
}

/** What notices other writers' files: directory events or polling, listings, a tick, a replaced corpus directory. */
function watcherFor(options: StoreOptions, dir: string, log: Logger, indexer: CorpusIndexer, peers: Peers, issued: IssuedLog, onReplaced: () => void): CorpusWatcher {
  return new CorpusWatcher({
    dir,
    mode: options.watch ?? 'events',
    intervalMs: options.reconcileMs ?? 2000,
    log,
    onName: (name) => indexer.noticeName(name),
    onListing: (names) => {
      peers.heardListing(names);
      return indexer.reconcileWith(names);
    },
    mustList: () => indexer.hasDamaged,
    // Records this store's writers add are announced in the log: while they alone change the directory, listings back off.
    announced: () => issued.highest,
    // Where bells serve, records for nobody here are read a batch at a time, not in the path of the next answer.
    onTick: peers.lookPast,
    onReplaced,
    sharedIntervalMs: options.reconcileMs ?? SHARED_LISTING_MS,
  });
}

/** Appends under an idempotency key: the key map, and claims under .state/idempotency/. */
function keyedAppends(
  options: StoreOptions,
  paths: CorpusPaths,
  shape: IdShape,
  keys: IdempotencyKeys,
  index: RecordIndex,
  indexer: CorpusIndexer,
  peers: Peers,
  leftovers: TempLeftovers,
  log: Logger,
): KeyedAppends {
  const claims = new IdempotencyClaims(paths.idempotency, paths.tmp, log, options.claimStaleMs, (file, err, creating) => leftovers.note(file, err, creating));
  // A reconcile may be skipped (one already running, a directory that looks
  // unchanged); taking over a dead writer's key must see every file.
  const readUnheld = async () => {
    for (const n of await indexer.idsOnDisk()) if (!index.has(n)) await indexer.ingest(n);
  };
  const issuedUpTo = () => (peers.hear(), index.highest);
  return new KeyedAppends({ keys, log, claims, shape, paths, readUnheld, issuedUpTo, dropIfGone: (n) => indexer.dropIfGone(n) });
}

/** What subscriptions follow: the store's events and its readiness, and the wings that answer a catch-up and hear for it. */
function feedOf(store: StoreFace, index: RecordIndex, visibility: Visibility, interests: Interests): RecordFeed {
  return {
    on: (event, listener) => store.on(event, listener),
    off: (event, listener) => store.off(event, listener),
    get ready() {
      return store.ready;
    },
    eachHeldAfter: (mark, filter) => visibility.eachHeldAfter(mark, filter),
    matches: (n, filter) => index.matches(n, filter),
    listen: (filter) => interests.listen(filter),
  };
}

/** The record index, answering the text filter from record files and the corpus's shared word index (text-index.ts). */
function searchableIndex(shape: IdShape, paths: CorpusPaths, reader: Pick<RecordReader, 'readSync'>, maxRecordBytes: number, limits: StoreOptions['textIndex'], log: Logger) {
  const file = (n: number) => paths.record(shape.format(n));
  return new SearchableIndex(shape, (n) => reader.readSync(file(n), maxRecordBytes), maxRecordBytes, (n) => recordFileStamp(file(n)), limits, { file: paths.textIndex, tmpDir: paths.tmp, log });
}
