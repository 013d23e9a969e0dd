/**
 * Answers from the index: `after` marks (parsed, and refused `id_ahead`
 * past what this store has issued), listings after a mark, and a record's
 * replies with their receipts.
 */
import fs from 'node:fs/promises';
import { RelayError } from '../../errors.js';
import type { RecordFilter } from '../../model/filter.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordIndex } from '../../model/record-index.js';
import type { CorpusPaths } from '../../disk/paths.js';
import type { AgentDeliveries } from '../agents/deliveries.js';
import { aheadRefusal, highestMark } from '../follow/after-mark.js';
import { appeared } from '../follow/waiters.js';
import type { ListIds, RepliesResult } from '../store-options.js';

export interface ListingParts {
  index: RecordIndex;
  shape: IdShape;
  paths: CorpusPaths;
  agents: Pick<AgentDeliveries, 'deliveredTo'>;
}

export class Listing {
  constructor(private readonly parts: ListingParts) {}

  /**
   * An `after` mark every door takes (waits, listings, streams), parsed
   * (parseAfter), then, once the index is built, refused `id_ahead` past the
   * newest id this store has issued (after-mark.ts). A mark on a file that is on disk but
   * not heard yet (a peer's record linked a moment ago) is not ahead. A
   * listing's mark may also be at or below a cited id (`listing`): its
   * known-missing list goes on from there (list_relays' too_large names
   * such an after).
   */
  async checkMark(n: number, listing = false): Promise<number> {
    const { index, paths, shape } = this.parts;
    const top = { newestHeld: index.highestHeld(), highWater: index.highest };
    if (n <= highestMark(top) || (listing && index.missingFrom(n))) return n;
    if (await fs.access(paths.record(shape.format(n))).then(() => true, () => false)) return n;
    throw aheadRefusal(n, top, shape);
  }

  /** Parses an `after` mark (its shape only; markOf also checks it against the store); relay-0000 means "from the start". */
  parseAfter(after: string): number {
    const { shape } = this.parts;
    const n = shape.parse(after);
    if (n === null) {
      throw new RelayError('bad_id', `"${after}" is not an id of this store, so it cannot mark a place in id order. Send ${shape.describe} (e.g. ` +
        `${shape.example}), or ${shape.format(0)} for the start, or leave after out.`);
    }
    return n;
  }

  /** Held and KNOWN_MISSING ids after a mark, as numbers; a filter selects held records, so with one the missing list is empty. */
  idsAfter(after: string | undefined, mark: number, filter: RecordFilter | null): ListIds {
    const { index } = this.parts;
    return { after: after ?? null, present: index.matchingAfter(mark, filter), knownMissing: filter ? [] : index.knownMissingAfter(mark) };
  }

  async replies(id: string): Promise<RepliesResult> {
    const { index, shape } = this.parts;
    const n = shape.parseRecordId(id);
    // A wait item's fields (the listing says so), but never bytes or answers; a damaged record claims nothing, so names nothing.
    const replies = n === null ? [] : index.repliesTo(n).flatMap((m) => {
      const meta = index.get(m)?.meta;
      return meta ? [appeared(meta)] : [];
    });
    const asked = n === null ? undefined : index.get(n)?.meta;
    const deliveredTo = asked ? await this.parts.agents.deliveredTo(n!, asked.to, asked.from) : null;
    return deliveredTo === null ? { parent: id, replies } : { parent: id, replies, deliveredTo };
  }
}
