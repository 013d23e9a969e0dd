/**
 * A first look at a peer's record that costs less than indexing it: one
 * page read (open, pread, close: no fstat, no read to the end), the digest
 * checked as at any first sight, and its claims read from its header lines.
 *
 * A lazy index (corpus-indexer.ts) holds a record it looked at this way
 * unverified (record-index.ts) until a call needs more of it: its deposit
 * as the index keeps it, a filter its header matches, the ids it makes
 * KNOWN_MISSING. That is exact because a later check can only take claims
 * away (a damaged file, or a record whose body does not parse, claims
 * nothing), so what its header cannot match, the checked record cannot
 * match either. A file that does not fit the page, or is not a whole
 * record, goes the full way, with its retries.
 */
import { readRecordHeadSync } from '../../disk/record-file.js';
import { BROADCAST } from '../../model/agent-name.js';
import { splitRecordFile, type Deposit } from '../../model/deposit.js';
import { parseRecipients } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordClaims } from '../../model/record.js';
import { headerClaims } from './parsed-record.js';

/** What a first look read: as the full read would have it, except claims from the header lines only. */
export interface Peek {
  deposit: Deposit;
  claims: RecordClaims;
  /** The record's own bytes (a copy: the page is reused), checked against the digest: a record wanted at once is indexed from them. */
  record: Buffer;
}

/** The page read: a swarm's records (a few hundred bytes) fit it with their deposit headers. */
const PAGE = 4096;

export class RecordPeeker {
  /** One buffer for every look: a look is synchronous, and its result keeps no view of it. */
  private readonly page = Buffer.allocUnsafe(PAGE);

  constructor(
    private readonly shape: IdShape,
    /** Never a symlink followed or a FIFO blocked on (record-file.ts says why); what is not a regular file errs or fills the page. */
    private readonly readHead: (file: string, into: Buffer) => number = readRecordHeadSync,
  ) {}

  /**
   * The first look at `file`: null when it should be read the full way (it
   * does not fit the page, is not whole, or could not be read); throws
   * ENOENT when there is no such file, as the full read does.
   */
  look(file: string): Peek | null {
    let length: number;
    try {
      length = this.readHead(file, this.page);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw err;
      return null;
    }
    if (length === PAGE) return null;
    try {
      const { deposit, record } = splitRecordFile(this.page.subarray(0, length));
      return { deposit, claims: headerClaims(record, this.shape), record: Buffer.from(record) };
    } catch {
      return null;
    }
  }
}

/**
 * Whether a record claiming this is addressed to `agent` (its name or
 * `all` in to:, what a named agent's waits ask for). A named server indexes
 * such a record whole at first sight, even between its calls: its next wait
 * will want it, and would otherwise read it a second time.
 */
export function addressedTo(claims: RecordClaims, agent: string | undefined): boolean {
  if (agent === undefined || claims.to === null) return false;
  const recipients = parseRecipients(claims.to);
  return recipients.includes(agent) || recipients.includes(BROADCAST);
}
