/**
 * How one store process recovers its view of the corpus: records other
 * tools brought, files that were half-written when first seen, and waits
 * that begin before the start-up scan is done.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, unlink, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { createLogger } from '../../lib/log.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { openStore } from '../../lib/store/store.js';
import { record, tempStore } from '../support/helpers.js';
import { eventually } from '../support/poll.js';

const BY = { depositedBy: 'cli/test' };

/** Writes a record file the way rsync or git would: no store involved. */
async function dropIn(corpus: string, id: string, body: string): Promise<Buffer> {
  const bytes = Buffer.from(record({ kind: 'note' }, body));
  const file = buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp', depositedAt: new Date().toISOString(), digest: digestOf(bytes) }, bytes);
  await writeFile(corpusPaths(corpus).record(id), file);
  return file;
}

test('the start-up scan wakes nobody: records held before the start are not news', async (t) => {
  const { corpus } = await tempStore(t);
  for (const id of ['relay-0001', 'relay-0002', 'relay-0003']) await dropIn(corpus, id, id);
  const seen: string[] = [];
  const { RelayStore } = await import('../../lib/store/store.js');
  const second = await RelayStore.prepare({ corpus, watch: 'none' });
  t.after(() => second.close());
  // Listening from before the scan starts.
  second.on('record', (meta) => seen.push(meta.id));
  await second.open();
  assert.equal(second.size, 3);
  assert.deepEqual(seen, []);
});

test('a wait without after that begins before the scan hears a record landing during it', async (t) => {
  const { corpus } = await tempStore(t);
  for (let i = 1; i <= 200; i++) await dropIn(corpus, `relay-${String(i).padStart(4, '0')}`, `old ${i}`);
  const { RelayStore } = await import('../../lib/store/store.js');
  const store = await RelayStore.prepare({ corpus, watch: 'none' });
  t.after(() => store.close());
  const waiting = store.wait({ timeoutMs: 5000 });
  const result = await store.append(Buffer.from(record({ kind: 'new' }, 'fresh')), BY);
  const answer = await waiting;
  assert.equal(answer.timedOut, false);
  assert.deepEqual(answer.appeared.map((r) => r.id), [result.id]);
});

test('ids of records that rsync or git brought are never reused once their files vanish', async (t) => {
  const { corpus } = await tempStore(t);
  for (const id of ['relay-0001', 'relay-0002', 'relay-0003']) await dropIn(corpus, id, id);
  const first = await openStore({ corpus, watch: 'none' });
  await first.close();
  await chmod(corpusPaths(corpus).record('relay-0003'), 0o644);
  await unlink(corpusPaths(corpus).record('relay-0003'));
  const second = await openStore({ corpus, watch: 'none' });
  t.after(() => second.close());
  const { id } = await second.append(Buffer.from(record({}, 'after the loss')), BY);
  assert.equal(id, 'relay-0004');
});

test('a file first seen half-written is served once it is whole, and then wakes waiters', async (t) => {
  const { corpus } = await tempStore(t);
  const warnings: string[] = [];
  const log = createLogger('warn', (line) => warnings.push(line));
  const store = await openStore({ corpus, watch: 'events', reconcileMs: 50, log });
  t.after(() => store.close());
  const bytes = Buffer.from(record({ kind: 'note' }, 'arrives in two writes'));
  const whole = buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp', depositedAt: new Date().toISOString(), digest: digestOf(bytes) }, bytes);
  // The first half lands and stays that way past the settling retries, as a stalled `git pull` might leave it.
  const file = corpusPaths(corpus).record('relay-0001');
  await writeFile(file, whole.subarray(0, whole.length - 5));
  await eventually(() => warnings.some((w) => w.includes('relay-0001 is damaged')), 'the store to call the file damaged');
  assert.equal((await store.exists('relay-0001')).state, 'PRESENT');
  await assert.rejects(store.read('relay-0001'), { code: 'damaged' });

  // A damaged record is held but not listed among what a waiter may see, so a wait from the start blocks.
  const woken = store.wait({ after: 'relay-0000', timeoutMs: 5000 });
  await writeFile(file, whole);
  const answer = await woken;
  assert.deepEqual(answer.appeared.map((r) => r.id), ['relay-0001']);
  assert.equal(answer.appeared[0]!.kind, 'note');
  assert.equal((await store.read('relay-0001')).equals(whole), true);
});

test('a wait without after does not report a file that was already on disk when it began', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  // Another writer's record, on disk but not yet noticed by this process (no watcher here).
  await dropIn(corpus, 'relay-0001', 'landed before the wait');
  const waiting = store.wait({ timeoutMs: 5000 });
  await store.read('relay-0001'); // a read notices it and indexes it as news
  const { id } = await store.append(Buffer.from(record({ kind: 'new' }, 'landed after')), BY);
  const answer = await waiting;
  assert.deepEqual(answer.appeared.map((r) => r.id), [id]);
});

test('a FIFO in place of the settings file is refused at once instead of blocking the start', async (t) => {
  const { corpus } = await tempStore(t);
  const settings = corpusPaths(corpus).settings;
  await unlink(settings);
  const made = await new Promise<number | null>((resolve) => spawn('mkfifo', [settings]).on('close', resolve).on('error', () => resolve(null)));
  if (made !== 0) return t.skip('mkfifo is not available here');
  const { RelayStore } = await import('../../lib/store/store.js');
  await assert.rejects(RelayStore.prepare({ corpus, watch: 'none' }), { code: 'bad_settings' });
});

test('a record whose file vanished while the store held it is re-deposited under its id at once, not after the next listing', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' }); // no listing will run: as a store woken by bells, it watches no directory
  t.after(() => store.close());
  const bytes = Buffer.from(record({ kind: 'note' }, 'the lost one'));
  const lost = await store.append(bytes, BY);
  await store.append(Buffer.from(record({}, 'after it')), BY);
  await unlink(corpusPaths(corpus).record(lost.id));
  const redeposited = await store.append(bytes, { ...BY, id: lost.id });
  assert.deepEqual([redeposited.id, redeposited.digest], [lost.id, lost.digest]);
  assert.ok((await store.read(lost.id)).toString().endsWith(bytes.toString()));
});

test('a proposal of an id whose file is still there but damaged is refused id_held: records are never overwritten', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  const bytes = Buffer.from(record({ kind: 'note' }, 'kept'));
  const held = await store.append(bytes, BY);
  const file = corpusPaths(corpus).record(held.id);
  await chmod(file, 0o644);
  await writeFile(file, 'not a record any more');
  await assert.rejects(store.append(bytes, { ...BY, id: held.id }), (err: Error & { code?: string }) => err.code === 'id_held');
});
