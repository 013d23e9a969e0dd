/**
 * Choosing the id a new record is published under, taking it with `link()`
 * so that no two writers, in this process or any other, ever get the same
 * one, and telling the other processes: the whole publish of a record file
 * (`publish`), run straight through the disk's steps (lib/disk/publish.ts
 * `stage`, `linkExclusive`, `settle`), none of which calls back up here.
 *
 * - Without a proposal: one past the highest id ever issued (the high-water
 *   mark). When the name holds other bytes, another writer won it; index
 *   what it published, then try the next one with the same temp file.
 *   What link() answered is never taken on its own word (publish.ts
 *   linkExclusive looks at the target): a lost reply over NFS that says
 *   EEXIST for our own link is our success, not a reason to link the same
 *   bytes under a second id.
 * - With a proposal: taken when well formed, not held, and not beyond the
 *   next free id: a gap below the mark (a KNOWN_MISSING one is how a lost
 *   record is re-deposited) or the next free id itself.
 *
 * On a local filesystem the link blocks (publish.ts `blocking`), so the id
 * is noted in the issued log, and the record's bells rung, microseconds
 * after the name is taken, before the directory is fsynced: waiters
 * elsewhere read it meanwhile, and learn from the line whom it is for
 * instead of opening it (model/issued-line.ts). A writer that loses a race
 * then finds the winner's line already there and moves past every id taken
 * meanwhile: with the link in the thread pool, a winner's line waited for
 * its process's next turn, and forty writers on two cores lost 3.0–3.5 ids
 * for each record they stored (each a failed link(), a hear and often a
 * file read).
 *
 * Links are made one at a time in each process, in id order (`serially`):
 * two appends in flight at once would otherwise race their link() calls
 * through the thread pool, and N+1 could appear on disk before N. Every
 * watcher then sees N+1 first, a wait there answers with cursor N+1, and an
 * agent that passes the cursor back as `after` never sees N (spec §8a).
 * Across processes the order holds by construction: a writer tries N+1
 * only once N is on disk (its link of N failed) or is its own. An id is
 * issued by the link itself, so no id is ever issued and not yet visible
 * in another process; in this one, an id linked and not yet indexed is
 * told to follow/visibility.ts (`linked`) until the store indexes it, and
 * the store's cursor stops below it (visibleUpTo).
 *
 * Citing an id buys nothing here (spec §8c): a KNOWN_MISSING id above the
 * mark is neither stepped over nor open to a proposal. Either would let one
 * agent, within its rate limit, burn ids it never fills (a record citing the
 * next 64 ids took 65) or end assignment for everyone (cite relay-9999, then
 * propose it).
 */
import { splitRecordFile } from '../../model/deposit.js';
import { RelayError } from '../../errors.js';
import { nextFreeId, type IdShape } from '../../model/ids.js';
import type { IssuedHint } from '../../model/issued-line.js';
import type { CorpusPaths } from '../../disk/paths.js';
import { linkExclusive, settle, stage, type PublishInto } from '../../disk/publish.js';
import { readRecordFile } from '../../disk/record-file.js';
import type { RecordIndex } from '../../model/record-index.js';
import type { CorpusFacts } from '../corpus-facts.js';
import type { Visibility } from '../follow/visibility.js';
import { bellsOf } from '../hear/bell-keys.js';
import type { Bells } from '../hear/bells.js';
import { ONLY_BELOW, type Peers } from '../hear/peers.js';
import type { CorpusIndexer } from '../index/corpus-indexer.js';
import type { IssuedLog } from './issued-log.js';

export interface IdAllocatorParts {
  index: RecordIndex;
  indexer: Pick<CorpusIndexer, 'ingest' | 'dropIfGone'>;
  shape: IdShape;
  paths: CorpusPaths;
  /** Where a record file is written before it is linked, and the directory synced after. */
  into: PublishInto;
  /** Where each id is noted the moment it is linked. */
  issued: Pick<IssuedLog, 'note'>;
  /** Rung the moment a record is linked; null on a read-only store (which never publishes). */
  bells: Pick<Bells, 'ring'> | null;
  /** Hears what peers took up to at least `n`: the issued log, each id held from its line where it has one. */
  peers: Pick<Peers, 'hear'>;
  /** Told of each id linked here, which a cursor may not pass until the store has indexed it. */
  visibility: Pick<Visibility, 'linked' | 'indexed'>;
  /** Whether the corpus is on a filesystem other hosts share (NFS, sshfs), where link()'s EEXIST may be our own success. */
  facts: Pick<CorpusFacts, 'shared'>;
  /** Brings the index up to date with the disk (a readdir and what follows). */
  relist(): Promise<void>;
}

/** The id a caller proposes for a record, and the record's digest (an id_held refusal says whether the holder is the same bytes). */
export interface Proposal {
  n: number;
  digest: string;
}

export class IdAllocator {
  /** The id this process is linking right now (one at a time, see `serially`). */
  private reserved: number | null = null;
  /** The highest id this process has linked: appends in flight hold ids the index does not have yet. */
  private highestLinked = 0;
  /** The tail of this process's links, one after another. */
  private linking: Promise<unknown> = Promise.resolve();
  /** Ids another writer linked first while this process tried them: each a failed link(). */
  private lostCount = 0;

  private readonly index: RecordIndex;
  private readonly shape: IdShape;

  constructor(private readonly parts: IdAllocatorParts) {
    ({ index: this.index, shape: this.shape } = parts);
  }

  /**
   * Publishes a record file under the next free id, or under `proposal`
   * (checked first): written and fsynced under a temp name, linked, noted
   * in the issued log with `hint` (what the record claims, who deposited
   * it) and rung in that same turn, the directory fsynced. Every id below
   * it this process knows of is looked at before the link, so the record
   * is never indexed here while a lower one that exists is not.
   * Answers the id once it is durable; until the caller has indexed it and
   * says so (follow/visibility.ts `indexed`), the id stops what a cursor may
   * cover here. Should the directory's sync fail, the record is on disk all
   * the same: it is indexed from there before the refusal is thrown.
   */
  async publish(file: Uint8Array, proposal: Proposal | null, hint: IssuedHint): Promise<number> {
    if (proposal !== null) await this.checkProposal(proposal.n, proposal.digest);
    const { into, issued, bells } = this.parts;
    const temp = await stage(file, into);
    let n: number;
    try {
      n = proposal === null ? await this.linkNextFree(temp) : await this.linkProposed(temp, proposal.n, proposal.digest);
    } catch (err) {
      await settle(temp, into, false);
      throw err;
    }
    // The record is visible from here on: noted with what it claims and rung in this turn, before this process makes it durable.
    issued.note(n, hint);
    bells?.ring(bellsOf(hint.claims));
    try {
      await settle(temp, into, true);
    } catch (err) {
      // Linked, so on disk all the same: indexed from there, and no longer held back as unindexed.
      await this.parts.indexer.ingest(n).catch(() => {});
      this.parts.visibility.indexed(n);
      throw err;
    }
    return n;
  }

  /** The number of a proposed id, or a refusal showing the expected shape. */
  parseProposal(id: string): number {
    const n = this.shape.parseRecordId(id);
    if (n === null) {
      throw new RelayError('bad_id', `"${id}" is not a record id of this store; ids are ${this.shape.describe}, compared literally (e.g. ` +
        `${this.shape.example}). Send one of that shape, or leave id out and the store assigns the next free one.`);
    }
    return n;
  }

  /** Refuses a proposal that is held or too far ahead; looks at the disk once before saying "ahead". */
  async checkProposal(n: number, digest: string): Promise<void> {
    for (let fresh = false; ; fresh = true) {
      // Held, unless its file is gone: then this is the re-deposit of a lost record, and the index catches up first.
      if (this.index.has(n) && !(await this.parts.indexer.dropIfGone(n))) throw await this.heldRefusal(n, digest);
      const next = this.nextFree();
      if (n <= (next ?? this.shape.max)) return;
      if (fresh) {
        const nextText = next === null ? 'none: the id space is used up' : this.shape.format(next);
        throw new RelayError('id_ahead', `${this.shape.format(n)} is beyond the next free id (${nextText}); a proposal may fill a gap or take the ` +
          `next free id, not reserve ids ahead, even ids a record cites. Leave id out to take the next free one.`, { nextFree: next === null ? null : this.shape.format(next) });
      }
      await this.parts.relist(); // our view may be stale: another process may have moved on
    }
  }

  /** Links `temp` under the proposed id, or refuses if another writer holds it now. */
  async linkProposed(temp: string, n: number, digest: string): Promise<number> {
    const link = () => {
      // The ids below it, as linkNext hears them (nothing above: that may be this very record's line).
      this.parts.peers.hear(n - 1, ONLY_BELOW);
      return this.linkReserved(temp, n);
    };
    if (await this.serially(link)) return n;
    throw await this.heldRefusal(n, digest);
  }

  /** Links `temp` under the next free id, moving on past ids other writers take first. */
  linkNextFree(temp: string): Promise<number> {
    return this.serially(() => this.linkNext(temp));
  }

  /** Ids other writers linked first since this store opened: how contended appends are (the hub's /metrics). */
  get lost(): number {
    return this.lostCount;
  }

  /** Runs one link after the previous one has settled, so this process links in id order. */
  private serially<T>(link: () => Promise<T>): Promise<T> {
    const run = this.linking.then(link, link);
    this.linking = run.catch(() => {});
    return run;
  }

  private async linkNext(temp: string): Promise<number> {
    // What other writers took while this record was written and fsynced is in the issued log
    // (one fstat when nothing is new): a try past them costs less than a link() that fails.
    this.parts.peers.hear();
    for (;;) {
      const n = this.nextFree();
      if (n === null) {
        throw new RelayError('ids_exhausted', `This store has used every id up to ${this.shape.format(this.shape.max)} and cannot take another ` +
          `record. Start a new store, or create one with a wider id (\`p-e-relay init --id-width ${this.shape.width + 1}\`).`);
      }
      if (await this.linkReserved(temp, n)) return n;
      this.lostCount++;
      // Another writer took it first: remember, and hear what every writer took meanwhile, so the next try is past
      // them all rather than one past this one (with many writers, one failed link() each), then index what it published.
      this.index.noteIssued(n);
      this.parts.peers.hear(n);
      await this.parts.indexer.ingest(n);
    }
  }

  private nextFree(): number | null {
    let highest = this.index.highest;
    if (this.reserved !== null && this.reserved > highest) highest = this.reserved;
    if (this.highestLinked > highest) highest = this.highestLinked;
    return nextFreeId(highest, this.shape.max);
  }

  private async linkReserved(temp: string, n: number): Promise<boolean> {
    this.reserved = n;
    try {
      const { shared } = this.parts.facts;
      const linked = await linkExclusive(temp, this.parts.paths.record(this.shape.format(n)), { eexistMayLie: shared, blocking: !shared });
      if (linked) {
        if (n > this.highestLinked) this.highestLinked = n;
        this.parts.visibility.linked(n);
      }
      return linked;
    } finally {
      this.reserved = null;
    }
  }

  /** The refusal for a held id says whether its bytes are the caller's: a retry after a lost answer learns it landed. */
  private async heldRefusal(n: number, digest: string): Promise<RelayError> {
    const id = this.shape.format(n);
    let identical: boolean | null = null;
    try {
      identical = splitRecordFile(await readRecordFile(this.parts.paths.record(id))).deposit.digest === digest;
    } catch {
      identical = null;
    }
    const said =
      identical === true ? 'and its bytes are identical to yours (same digest), so an earlier call of yours most likely landed: there is nothing to resend'
      : identical === false ? 'by a record with different bytes'
      : 'by a record that could not be read back to compare';
    return new RelayError('id_held', `${id} is already held, ${said}. Records are never overwritten; leave id out to take the next free id.`, { id, identical });
  }
}
