/**
 * The lazy index in one process, with a second store on the corpus as the
 * other writer: what it holds unverified and what it indexes whole at once.
 * (Whether its answers are the eager index's: lazy-index.process.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../lib/store/store.js';
import { record, tempStore } from '../support/helpers.js';

test("a named store indexes a peer's record addressed to its agent or to all whole at first sight, and holds the others unverified", async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus });
  const named = await openStore({ corpus, agent: 'ana' });
  t.after(() => Promise.all([writer.close(), named.close()]));
  for (const to of ['ana', 'bo', 'all', 'bo, cy']) await writer.append(Buffer.from(record({ kind: 'note', to }, `for ${to}`)), { depositedBy: 'mcp' });
  await named.exists('relay-0001'); // every call first hears what peers added
  assert.equal(named.size, 4);
  assert.equal(named.unverified, 2, 'the two records for others');
});

test('an unnamed store with nobody listening holds every peer record unverified, and a listing checks them', async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus });
  const lazy = await openStore({ corpus });
  t.after(() => Promise.all([writer.close(), lazy.close()]));
  await writer.append(Buffer.from(record({ kind: 'note', to: 'ana', parent: 'relay-0009' }, 'cites an id not held')), { depositedBy: 'mcp' });
  await lazy.exists('relay-0001');
  assert.equal(lazy.unverified, 1);
  assert.deepEqual(await lazy.list(), { after: null, present: ['relay-0001'], knownMissing: ['relay-0009'] });
  assert.equal(lazy.unverified, 0, 'the listing of missing ids needed its parent:');
});
