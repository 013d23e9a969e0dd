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
import { ABOUT_NEWS_EVERY_MS, rosterLine, rosterNews } from '../../lib/mcp/tools/roster-news.js';
import { openStore } from '../../lib/store/store.js';
import { cleanup } from '../support/cleanup.js';
import { tempStore } from '../support/helpers.js';

test('a name listed while its file could not be read is told once it can be', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  cleanup(t, () => store.close());
  await store.agents.roster.seen('ana', 'served');
  assert.deepEqual(await rosterNews(store, 'ana'), { agents: [], whole: true });
  const bob = path.join(corpus, '.state', 'roster', 'bob');
  await writeFile(bob, 'null'); // listed, but not yet a roster entry (caught mid-write, or a read that failed)
  assert.equal(await rosterNews(store, 'ana'), undefined, 'no one new that can be shown yet');
  await writeFile(bob, JSON.stringify({ name: 'bob', how: ['served'] }) + '\n');
  assert.deepEqual((await rosterNews(store, 'ana'))?.agents.map((a) => a.name), ['bob']);
  assert.equal(await rosterNews(store, 'ana'), undefined, 'and then not again');
});

test('a file in the roster that never reads as a name costs a look at it alone, not the whole roster on every answer', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  cleanup(t, () => store.close());
  await store.agents.roster.seen('ana', 'served');
  await store.agents.roster.seen('bob', 'served');
  await writeFile(path.join(corpus, '.state', 'roster', 'notes.txt'), 'left here by hand\n');
  assert.deepEqual((await rosterNews(store, 'ana'))?.agents.map((a) => a.name), ['bob']);
  const wholeReads = t.mock.method(store, 'roster');
  for (let i = 0; i < 3; i++) assert.equal(await rosterNews(store, 'ana'), undefined);
  assert.equal(wholeReads.mock.callCount(), 0);
});

const about = (text: string) => Buffer.from(`@p-e/x0\nkind: about\n\n${text}\n`);

test('one of 20 agents restating its about is news of that one alone, and at most once a minute', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  cleanup(t, () => store.close());
  const names = Array.from({ length: 20 }, (_, i) => `agent-${String(i).padStart(2, '0')}`);
  for (const name of names) {
    await store.agents.roster.seen(name, 'served');
    await store.append(about(`${name} reviews the store's append path.`), { depositedBy: `mcp/${name}`, agent: name });
  }
  const start = Date.now();
  const first = await rosterNews(store, 'agent-01', start);
  assert.equal(first?.whole, true);
  assert.equal(first?.agents.length, 19, 'the first answer: everyone else');
  await store.append(about('agent-00 reviews the bridge now.'), { depositedBy: 'mcp/agent-00', agent: 'agent-00' });
  const restated = await rosterNews(store, 'agent-01', start + ABOUT_NEWS_EVERY_MS);
  assert.deepEqual(restated, { agents: [{ name: 'agent-00', waiting: false, about: 'agent-00 reviews the bridge now.' }], whole: false });
  assert.equal(rosterLine(restated!.agents, restated!.whole), 'agents joined or restated (the others as before): agent-00 "agent-00 reviews the bridge now."');
  // Restated again at once: held back until a minute after it was last news, then told.
  await store.append(about('agent-00 reviews the bridge and the hub.'), { depositedBy: 'mcp/agent-00', agent: 'agent-00' });
  assert.equal(await rosterNews(store, 'agent-01', start + ABOUT_NEWS_EVERY_MS + 1_000), undefined);
  assert.deepEqual((await rosterNews(store, 'agent-01', start + 2 * ABOUT_NEWS_EVERY_MS))?.agents.map((a) => a.about), ['agent-00 reviews the bridge and the hub.']);
  // A name that joins is news at once, and alone.
  await store.agents.roster.seen('zed', 'served');
  assert.deepEqual(await rosterNews(store, 'agent-01', start + 2 * ABOUT_NEWS_EVERY_MS + 1), { agents: [{ name: 'zed', waiting: false }], whole: false });
});

test('abouts of names not on the roster are neither read nor shown; a name that comes shows its about', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  cleanup(t, () => store.close());
  await store.agents.roster.seen('ana', 'served');
  for (let i = 0; i < 50; i++) await store.append(about(`ghost ${i} knows everything.`), { depositedBy: 'cli/op', agent: `ghost-${i}` });
  assert.deepEqual((await store.roster()).map((e) => e.name), ['ana']);
  const look = await store.agents.roster.namesAndAbouts();
  assert.doesNotMatch(look.text, /ghost/, 'the cheap look a wait makes holds no about of a name not on the roster');
  const reads = t.mock.method(store.agents.roster, 'aboutOf');
  await store.roster();
  assert.equal(reads.mock.calls.filter((c) => String(c.arguments[0]).startsWith('ghost')).length, 0, 'no ghost about read');
  await store.agents.roster.seen('ghost-7', 'served');
  assert.equal((await store.roster()).find((e) => e.name === 'ghost-7')?.about, 'ghost 7 knows everything.');
});
