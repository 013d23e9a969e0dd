/**
 * The lazy index in one process, with a second store on the corpus as the
 * other writer: what it holds unverified and what it indexes whole at once.
 * (Whether its answers are a whole index's: lazy-index.process.test.ts.)
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { buildRecordFile, digestOf } from '../../../lib/model/deposit.js';
import { corpusPaths } from '../../../lib/disk/paths.js';
import { openStore } from '../../../lib/store/store.js';
import { countingReader } from '../../support/counting-reader.js';
import { record, tempStore } from '../../support/helpers.js';

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

test("a peer's record noted in the issued log is held from its line: no file is opened until a call needs it", async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus });
  const { reader, reads } = countingReader();
  const bystander = await openStore({ corpus, agent: 'ana', reader });
  t.after(() => Promise.all([writer.close(), bystander.close()]));
  for (const to of ['bo', 'cy', 'bo, cy']) await writer.append(Buffer.from(record({ kind: 'note', to }, `for ${to}`)), { depositedBy: 'mcp' });
  await bystander.exists('relay-0001');
  assert.equal(bystander.unverified, 3);
  assert.equal(reads.size, 0, `files read: ${[...reads.keys()].join(', ')}`);
  assert.match((await bystander.read('relay-0002')).toString(), /for cy/);
  assert.deepEqual([...reads.keys()], ['relay-0002'], 'the read opened that record alone');
});

test("a peer's keyed record is known by its key from its log line: the same key sent here is answered replayed, with no file opened", async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus });
  const { reader, reads } = countingReader();
  const bystander = await openStore({ corpus, reader });
  t.after(() => Promise.all([writer.close(), bystander.close()]));
  const first = await writer.append(Buffer.from(record({ kind: 'note', to: 'bo' }, 'once')), { depositedBy: 'mcp', idempotencyKey: 'k-1' });
  await bystander.exists('relay-0001');
  const again = await bystander.append(Buffer.from(record({ kind: 'note', to: 'bo' }, 'once')), { depositedBy: 'mcp', idempotencyKey: 'k-1' });
  assert.equal(again.id, first.id);
  assert.equal(again.replayed, true);
  assert.equal(reads.get(first.id), undefined, 'the replay was answered from the log line');
});

test("a peer's REST-keyed record is known from its log line by its key and digest: the same key and bytes here are answered replayed, with no file opened; other bytes are another record", async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus });
  const { reader, reads } = countingReader();
  const bystander = await openStore({ corpus, reader });
  t.after(() => Promise.all([writer.close(), bystander.close()]));
  const rest = { depositedBy: 'http/ana', agent: 'ana', idempotencyKey: 'k-1' };
  const first = await writer.append(Buffer.from(record({ kind: 'note', to: 'bo' }, 'once')), rest);
  await bystander.exists('relay-0001');
  const again = await bystander.append(Buffer.from(record({ kind: 'note', to: 'bo' }, 'once')), rest);
  assert.deepEqual([again.id, again.replayed], [first.id, true]);
  assert.equal(reads.get(first.id), undefined, 'the replay was answered from the log line');
  const other = await bystander.append(Buffer.from(record({ kind: 'note', to: 'bo' }, 'other words')), rest);
  assert.notEqual(other.id, first.id);
});

test('a record no line describes (put there by rsync, git or a hand) is looked at in its file, as before', async (t) => {
  const { corpus } = await tempStore(t);
  const { reader, reads } = countingReader();
  const lazy = await openStore({ corpus, reader });
  t.after(() => lazy.close());
  const bytes = Buffer.from(record({ kind: 'note', to: 'bo' }, 'by hand'));
  const file = buildRecordFile({ provenance: 'as-received', depositedBy: 'rsync', depositedAt: new Date().toISOString(), digest: digestOf(bytes) }, bytes);
  const temp = path.join(corpus, '.by-hand');
  await fs.writeFile(temp, file);
  await fs.link(temp, path.join(corpus, 'relay-0001'));
  await fs.unlink(temp);
  await fs.appendFile(corpusPaths(corpus).issued, 'relay-0001\n'); // an id alone: what older writers note
  await lazy.exists('relay-0001');
  assert.equal(lazy.unverified, 1);
  assert.equal(reads.get('relay-0001'), 1, 'its first page was read');
});
