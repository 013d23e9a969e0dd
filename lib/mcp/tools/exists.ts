import { z } from 'zod';
import { existsText } from '../../doors/render.js';
import { idParam } from './shared.js';
import type { IdShape } from '../../model/ids.js';
import { defineTool, READ } from './tool.js';

export const exists = defineTool({
  name: 'exists',
  title: 'What this store knows about an id',
  hints: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  door: READ,
  contract: ({ shape, agent }) => (agent ? named(shape) : ({
    description: [
      // spec §3: a malformed id is UNKNOWN here. The shape itself is in append_relay's bytes (the first tool read). What it is
      // for beside get_relay, whose not_found carries the same state, so no agent takes it for a duplicate of other tools.
      'What this store knows about one id, without reading its bytes: PRESENT (held), ' +
        'KNOWN_MISSING (cited but absent) or UNKNOWN (nothing mentions it, or the id is malformed: never refused). ' +
        'For the state alone (e.g. before a re-deposit); get_relay\'s not_found names it too.',
    ].join('\n\n'),
    input: { id: idParam(shape, 'the id to ask about') },
    output: {
      id: z.string().describe('as given'),
      // What to do is said once, in get_relay's not_found, where an agent mostly meets the state (fetching a parent: or ref:); the re-deposit itself in append_relay's id.
      state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']).describe(
        'PRESENT: held here (digest unchecked: get_relay may refuse it damaged); ' +
        'KNOWN_MISSING: a held record cites it in parent: or ref:, its bytes are not here (what to do: get_relay\'s ' +
        'not_found); UNKNOWN: nothing held here mentions it, or malformed'),
    },
  })),
  async run(store, { id }) {
    const result = await store.exists(id);
    return { text: existsText(result.id, result.state), structured: { ...result } };
  },
});

/** A named server's exists: the states in one line; what to do about one is get_relay's and append_relay's. */
function named(shape: IdShape) {
  return {
    description: 'What the store knows of one id, without its bytes: PRESENT (held), KNOWN_MISSING (cited, bytes absent) or UNKNOWN (never mentioned, or malformed).',
    input: { id: idParam(shape, 'the id') },
    output: { id: z.string(), state: z.enum(['PRESENT', 'KNOWN_MISSING', 'UNKNOWN']) },
  };
}
