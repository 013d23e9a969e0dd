/**
 * The store's wait (wait_for_relay, the CLI's `wait`): a blocked wait
 * (follow/waiters.ts) given this store's cursor and its peers' records, its
 * question items counted answered, its bytes inlined on request.
 */
import { countsAsAnswer, isQuestion } from '../../model/answer-count.js';
import type { IdShape } from '../../model/ids.js';
import type { RecordIndex, RecordMeta } from '../../model/record-index.js';
import { AGENT_NAME_SHAPE, depositingAgent } from '../../model/agent-name.js';
import type { CorpusIndexer } from '../index/corpus-indexer.js';
import type { Peers } from '../hear/peers.js';
import { clampWait, WAIT_MAX_ITEMS, type WaitResult, type Waiters } from './waiters.js';
import type { WaitOptions } from '../store-options.js';
import { inlineBytes, type InlineSources } from './inline-bytes.js';
import type { RecordBytes } from './subscription.js';
import type { Visibility } from './visibility.js';

export interface WaitParts {
  waiters: Waiters;
  visibility: Pick<Visibility, 'cursorAfter'>;
  peers: Pick<Peers, 'lookPast'>;
  index: RecordIndex;
  indexer: Pick<CorpusIndexer, 'idsOnDisk'>;
  /** Record files read and checked once (read/records.ts). */
  reads: Omit<InlineSources, 'heard'>;
  shape: IdShape;
}

export class StoreWaits {
  constructor(private readonly parts: WaitParts) {}

  /**
   * Blocks until a record matching the filter lands after `after` (null: after
   * the call began), or the time runs out. Records the filter rejects wake
   * nothing, but the answer's cursor moves past them.
   */
  async wait(options: WaitOptions, after: number | null): Promise<WaitResult & { cursor: string }> {
    const { waiters, visibility, peers, indexer, reads } = this.parts;
    // Files already there when a wait without a mark began (which this process
    // may notice a moment later) are not news to it: list them.
    const existing = after === null ? indexer.idsOnDisk().then((ids): ReadonlySet<number> => new Set(ids)) : undefined;
    const heardBytes = options.includeBytes ? new Map<string, RecordBytes>() : undefined;
    const result = await waiters.wait({
      after,
      timeoutMs: clampWait(options.timeoutMs),
      signal: options.signal,
      onProgress: options.onProgress,
      existing,
      filter: options.filter,
      match: options.match,
      limit: options.limit ?? WAIT_MAX_ITEMS,
      cursor: (atLeast, caughtUp) => visibility.cursorAfter(after, atLeast, caughtUp),
      lookForPeers: peers.lookPast,
      heardBytes,
    });
    for (const item of result.appeared) {
      if (!isQuestion(item.kind)) continue;
      item.answeredBy = this.answeredBy(item.id);
      item.answers = item.answeredBy.length;
    }
    if (heardBytes) {
      result.appeared = await inlineBytes(result.appeared, { heard: heardBytes, read: (id) => reads.read(id), sizeOf: (id) => reads.sizeOf(id) });
    }
    return { ...result, cursor: result.cursor! };
  }

  /**
   * Who gave the held answers to `id` (lib/model/answer-count.ts: later, and
   * by their own author where the channel knows it). On a wait's question
   * items, so that an agent sees who answered a broadcast already, without a
   * list_replies call per question, and adds an answer only when it has
   * something theirs lack.
   */
  private answeredBy(id: string): string[] {
    const { index, shape } = this.parts;
    const n = shape.parseRecordId(id);
    if (n === null) return [];
    const names: string[] = [];
    for (const m of index.repliesTo(n)) {
      const meta = index.get(m)?.meta;
      if (meta && countsAsAnswer(n, id, m, meta)) names.push(answererName(meta));
    }
    return names;
  }
}

/**
 * Who gave an answer, as a name an agent can address: the agent its channel
 * names (signed, or a named stdio server's), else its from: when that is a
 * name, else the channel itself (mcp, cli/<user>). Never free text: the
 * name goes into the wait's text as it is.
 */
function answererName(meta: RecordMeta): string {
  const agent = depositingAgent(meta.depositedBy, meta.agent);
  if (agent !== null) return agent;
  return meta.from !== null && AGENT_NAME_SHAPE.test(meta.from) ? meta.from : meta.depositedBy;
}
