/**
 * An `after` mark ahead of the store: every door refuses it (`id_ahead`),
 * because a wait or a stream after it would skip, silently and for good,
 * every record that lands up to it. The ids a store will issue next are the
 * ones above its high-water mark, so a mark is ahead when it is above both
 * the newest record held and the highest id ever issued here (a record whose
 * file has since vanished keeps its id issued: a mark on it skips nothing).
 *
 * A store that is behind (a mirror not yet synced, a clone, another host's
 * listing not yet read) cannot tell a cursor from a server that is ahead of
 * it from a mistyped one; both would skip, so both are refused, and the
 * refusal names the newest id the caller may pass instead.
 */
import { RelayError } from '../../errors.js';
import type { IdShape } from '../../model/ids.js';

export interface StoreTop {
  /** The newest record held (0: none). */
  newestHeld: number;
  /** The highest id ever issued or held here, even if its file has since gone. */
  highWater: number;
}

/** The highest mark this store takes: past it, the next ids it issues would be skipped. */
export function highestMark(top: StoreTop): number {
  return Math.max(top.newestHeld, top.highWater);
}

export function aheadRefusal(after: number, top: StoreTop, shape: IdShape): RelayError {
  const newest = shape.format(highestMark(top));
  const has = top.newestHeld > 0 ? `its newest record is ${shape.format(top.newestHeld)}` : 'it holds no records yet';
  const issued = top.highWater > top.newestHeld ? `, and no id above ${newest} has been issued` : '';
  return new RelayError(
    'id_ahead',
    `${shape.format(after)} is ahead of this store: ${has}${issued}, so a wait or listing after it would skip every record that lands up to it. ` +
      `Pass the cursor this server last gave you, ${newest} for what lands next, or ${shape.format(0)} for everything held. ` +
      'A cursor from another server (the primary a mirror copies, another clone) is for that server: this one has not reached it.',
    { after: shape.format(after), newest },
  );
}
