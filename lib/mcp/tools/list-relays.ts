import { z } from 'zod';
import { RelayError } from '../../errors.js';
import { listText, workClaimsText } from '../../doors/render.js';
import { FILTER_NAMES, parseFilter } from '../../model/filter.js';
import { CLAIM_KIND } from '../../model/work-claims.js';
import type { IdShape } from '../../model/ids.js';
import type { ListIds, ListResult } from '../../store/store.js';
import { filterParams } from './shared.js';
import { defineTool, READ } from './tool.js';

/**
 * The most ids (present and known missing together) one list_relays answer
 * carries. spec §8 gives list_relays no pagination, so a longer list is
 * refused, not cut: an answer of a million ids is a ~30 MB JSON-RPC line
 * (the ids twice, as text and as structuredContent), and the SDK's stdio
 * client ends the whole session on any line over 10 MiB
 * (STDIO_DEFAULT_MAX_BUFFER_SIZE), losing every other call with it. 200,000
 * ids of the widest shape (9 digits) are ~7 MB as one line.
 */
export const LIST_MAX_IDS = 200_000;
/** Live claims a listing of kind claim shows, oldest first; the CLI and GET /claims show them all. */
const CLAIMS_SHOWN = 200;

const n = (x: number) => x.toLocaleString('en-US');

/**
 * Whether the cap can bite: only where the id space is larger than it (6 or
 * more digits). On a smaller store the contract leaves it out, since a rule
 * that never applies is one more thing for an agent to reason about.
 */
const capped = (shape: IdShape) => shape.max > LIST_MAX_IDS;

export const listRelays = defineTool({
  name: 'list_relays',
  title: 'List ids',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape }) => ({
    description: `Ids only, ascending, never blocking: held ones, and KNOWN_MISSING ones when unfiltered (for history or a re-deposit).${
      capped(shape) ? `\nRefused too_large past ${n(LIST_MAX_IDS)} ids: send the after its _meta names.` : ''}`,
    input: {
      after: z.string().optional().describe(`optional, exclusive: only ids above it, e.g. ${shape.example}`),
      ...filterParams(),
    },
    output: { after: z.string().optional(), present: z.array(z.string()), knownMissing: z.array(z.string()) },
  }),
  async run(store, args) {
    // Counted before a single id is formatted: a refused list costs no strings.
    const filter = parseFilter(args, store.shape);
    const ids = await store.listIds(args.after, filter);
    refuseIfLonger(ids, store.shape);
    const result: ListResult = { after: ids.after, present: ids.present.map(store.shape.format), knownMissing: ids.knownMissing.map(store.shape.format) };
    // Who holds what (spec §8e): a listing of claims also says which are live, their holders and targets, in its text only.
    const claims = filter?.kind?.has(CLAIM_KIND) ? `\n${workClaimsText(await store.workClaims(), CLAIMS_SHOWN)}` : '';
    return { text: listText(result) + claims, structured: { ...result } };
  },
});

/** too_large for a list of more than LIST_MAX_IDS ids, naming the `after` whose answer holds the newest LIST_MAX_IDS. */
function refuseIfLonger(list: ListIds, shape: IdShape): void {
  const total = list.present.length + list.knownMissing.length;
  if (total <= LIST_MAX_IDS) return;
  const fits = shape.format(nthOfBoth(list.present, list.knownMissing, total - LIST_MAX_IDS - 1));
  throw new RelayError(
    'too_large',
    `This list holds ${n(total)} ids (${n(list.present.length)} present, ${n(list.knownMissing.length)} known ` +
      `missing); one list_relays answer carries at most ${n(LIST_MAX_IDS)} (a longer one is a message MCP clients ` +
      `drop). ` +
      `Narrow it: after: "${fits}" answers the newest ${n(LIST_MAX_IDS)} ids (after is exclusive; a later after, fewer), or filter with ${FILTER_NAMES}. ` +
      `For the whole list, an operator runs \`p-e-relay ls\` on the corpus or reads GET /relays from a hub (HTTP carries it whole).`,
    { ids: total, limit: LIST_MAX_IDS, after: fits },
  );
}

/** The k-th (0-based) id of two ascending lists taken together. */
function nthOfBoth(a: number[], b: number[], k: number): number {
  let i = 0;
  let j = 0;
  for (;;) {
    const fromA = j >= b.length || (i < a.length && a[i]! < b[j]!);
    const id = fromA ? a[i++]! : b[j++]!;
    if (i + j === k + 1) return id;
  }
}
