/**
 * Roster news in one process (lib/mcp/tools/roster-news.ts): its cheap look
 * must not swallow a name whose file could not be read when it was first
 * listed. The wait-level behaviour runs over real servers in
 * roster-news.process.test.ts.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { rosterNews } from '../../lib/mcp/tools/roster-news.js';
import { openStore } from '../../lib/store/store.js';
import { cleanup } from '../support/cleanup.js';
import { tempStore } from '../support/helpers.js';

test('a name listed while its file could not be read is told once it can be', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  cleanup(t, () => store.close());
  await store.agents.roster.seen('ana', 'served');
  assert.deepEqual(await rosterNews(store, 'ana'), []);
  const bob = path.join(corpus, '.state', 'roster', 'bob');
  await writeFile(bob, 'null'); // listed, but not yet a roster entry (caught mid-write, or a read that failed)
  assert.equal(await rosterNews(store, 'ana'), undefined, 'no one new that can be shown yet');
  await writeFile(bob, JSON.stringify({ name: 'bob', how: ['served'] }) + '\n');
  assert.deepEqual((await rosterNews(store, 'ana'))?.map((a) => a.name), ['bob']);
  assert.equal(await rosterNews(store, 'ana'), undefined, 'and then not again');
});

test('a file in the roster that never reads as a name costs a look at it alone, not the whole roster on every answer', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  cleanup(t, () => store.close());
  await store.agents.roster.seen('ana', 'served');
  await store.agents.roster.seen('bob', 'served');
  await writeFile(path.join(corpus, '.state', 'roster', 'notes.txt'), 'left here by hand\n');
  assert.deepEqual((await rosterNews(store, 'ana'))?.map((a) => a.name), ['bob']);
  const wholeReads = t.mock.method(store, 'roster');
  for (let i = 0; i < 3; i++) assert.equal(await rosterNews(store, 'ana'), undefined);
  assert.equal(wholeReads.mock.callCount(), 0);
});
