/**
 * An `after` mark ahead of the store is refused `id_ahead`, naming the newest
 * id, on every door: a wait after it would skip, for good, every record that
 * lands up to it (scaling.md's `wait --after relay-0042` on a store whose
 * newest was relay-0018 never reported what landed). A mark at or below the
 * high-water mark is taken, even where the newest file has gone, and so is a
 * cursor another process of the same corpus handed out a moment ago.
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../../lib/store/store.js';
import { record, runCli, stdioClient, tempStore } from '../../support/helpers.js';
import { openEvents, sign, startTestHub } from '../../support/http-helpers.js';
import { refused, refusedHttp } from '../../support/refusal.js';

async function storeWith(t: import('node:test').TestContext, count: number) {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus });
  t.after(() => store.close());
  for (let i = 0; i < count; i++) await store.append(Buffer.from(record({ kind: 'note', to: 'scout-7' })), { depositedBy: 'test' });
  return { corpus, store };
}

test('the store refuses a wait or a listing after a mark past its newest id, naming the newest; at the newest it is taken', async (t) => {
  const { store } = await storeWith(t, 3);
  const wait = await refused(store.wait({ after: 'relay-0042', timeoutMs: 0 }), 'id_ahead');
  assert.deepEqual(wait.details, { after: 'relay-0042', newest: 'relay-0003' });
  assert.match(wait.message, /relay-0003/);
  await refused(store.wait({ after: 'relay-0004', timeoutMs: 0 }), 'id_ahead'); // the next id to be issued would be skipped
  await refused(store.list('relay-0042'), 'id_ahead');
  const atNewest = await store.wait({ after: 'relay-0003', timeoutMs: 0 });
  assert.deepEqual([atNewest.appeared, atNewest.cursor], [[], 'relay-0003']);
  assert.deepEqual((await store.list('relay-0003')).present, []);
});

test('a mark on an issued id whose file has gone is taken (the high-water mark, not the newest held, is the limit)', async (t) => {
  const { corpus, store } = await storeWith(t, 3);
  await store.close();
  await rm(path.join(corpus, 'relay-0003'));
  const reopened = await openStore({ corpus });
  t.after(() => reopened.close());
  assert.deepEqual((await reopened.wait({ after: 'relay-0003', timeoutMs: 0 })).appeared, []);
  const ahead = await refused(reopened.wait({ after: 'relay-0004', timeoutMs: 0 }), 'id_ahead');
  assert.equal(ahead.details.newest, 'relay-0003');
  assert.match(ahead.message, /relay-0002/, 'says which record is the newest held');
});

test("a cursor for another process's record that just landed is not ahead", async (t) => {
  const { corpus, store } = await storeWith(t, 1);
  const other = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'note' }) });
  assert.equal(other.code, 0, other.stderr);
  assert.equal(other.stdout.trim(), 'relay-0002');
  const answer = await store.wait({ after: 'relay-0002', timeoutMs: 0 });
  assert.equal(answer.cursor, 'relay-0002');
});

test('MCP over stdio: wait_for_relay and list_relays refuse an after ahead of the store', async (t) => {
  const { corpus } = await storeWith(t, 2);
  const { client } = await stdioClient(t, corpus);
  for (const name of ['wait_for_relay', 'list_relays']) {
    const result = await client.callTool({ name, arguments: { after: 'relay-0042', ...(name === 'wait_for_relay' ? { timeout_ms: 0 } : {}) } });
    const refusal = refused(result as Record<string, unknown>, 'id_ahead');
    assert.equal(refusal.details.newest, 'relay-0002', name);
  }
});

test('HTTP: GET /relays?after= and GET /events with ?after= or Last-Event-ID refuse a mark ahead of the store', async (t) => {
  // Three agents: a signature is accepted once, and these three GETs would sign alike within a second.
  const h = await startTestHub(t, { agents: ['lister', 'streamer', 'resumer'] });
  await h.store.append(Buffer.from(record({ kind: 'note' })), { depositedBy: 'test' });
  const listed = await refusedHttp(await fetch(`${h.url}/relays?after=relay-0042`, { headers: { Authorization: sign('lister', await h.key('lister'), 'GET') } }), 'id_ahead');
  assert.equal(listed.details.newest, 'relay-0001');
  await refusedHttp(await openEvents(h.url, 'streamer', await h.key('streamer'), { query: 'after=relay-0042' }), 'id_ahead');
  await refusedHttp(await openEvents(h.url, 'resumer', await h.key('resumer'), { headers: { 'Last-Event-ID': 'relay-0042' } }), 'id_ahead');
});

test('CLI: wait --after and ls --after ahead of the store exit 1 naming the newest id', async (t) => {
  const { corpus, store } = await storeWith(t, 2);
  await store.close();
  for (const args of [['wait', '--after', 'relay-0042', '--timeout', '0'], ['ls', '--after', 'relay-0042']]) {
    const result = await runCli([...args, '--corpus', corpus]);
    assert.equal(result.code, 1, args[0]);
    assert.match(result.stderr, /relay-0042 is ahead of this store/, args[0]);
    assert.match(result.stderr, /relay-0002/, args[0]);
  }
});
