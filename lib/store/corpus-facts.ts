/**
 * What the filesystem under a corpus allows, learnt once at open: whether
 * other hosts may write it (then it is listened to by listing, and link()'s
 * EEXIST may be our own success), and whether an append can be made
 * durable there (docs/scaling.md). The wings that need a fact read it here.
 */
import { RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { filesystemFacts, type FilesystemFacts } from '../disk/filesystem.js';

export class CorpusFacts {
  /** The corpus is on a filesystem other hosts may write. */
  shared = false;
  /** That filesystem's name. */
  type = 'local';
  /** Set where a directory entry cannot be made durable: what is and is not on disk after an append. */
  entryNotDurable: string | null = null;

  constructor(
    private readonly corpus: string,
    private readonly readOnly: boolean,
    private readonly log: Logger,
  ) {}

  /**
   * Looks, and says so where it matters: a corpus on a network or FUSE
   * filesystem is listened to by listing every `listingMs`; one whose
   * listings are known to be stale is refused for writing.
   */
  async learn(listingMs: number): Promise<FilesystemFacts> {
    const facts = await filesystemFacts(this.corpus);
    this.shared = facts.shared;
    this.type = facts.type;
    if (!facts.shared) return facts;
    if (facts.cachedListings && !this.readOnly) throw new RelayError('cached_listings', `This server cannot write to the corpus safely: ${facts.cachedListings}`);
    this.log.info(`the corpus ${this.corpus} is on ${facts.type}, which other hosts may write: their records are found by listing it every ${listingMs} ms (--poll MS sets it)`);
    if (facts.cachedListings) this.log.warn(facts.cachedListings);
    if (facts.unknownListings) this.log.warn(facts.unknownListings);
    if (facts.entryNotDurable && !this.readOnly) {
      this.entryNotDurable = `on ${facts.type} ${facts.entryNotDurable}`;
      this.log.warn(`appends are not fully durable here: ${this.entryNotDurable}`);
    }
    return facts;
  }
}
