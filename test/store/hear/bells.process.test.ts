/**
 * Doorbells (lib/store/hear/bells.ts): a process whose waits filter on `to` or
 * `replies_to` is woken only by the records that can match them, not by
 * every record, and still misses nothing: records from writers that ring
 * no bell (a plain copy) arrive at the next listing, a bell removed under a
 * wait is made again, and a timeout's cursor still moves past what landed.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { rm, writeFile, link, unlink } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { buildRecordFile, digestOf } from '../../../lib/model/deposit.js';
import { openStore } from '../../../lib/store/store.js';
import { openTempStore, record, stdioClient, tempStore, textOf } from '../../support/helpers.js';
import { eventually } from '../../support/poll.js';

/** The inodes a process holds inotify watches on, from /proc/PID/fdinfo. */
function watchedInodes(pid: number): number[] {
  const inodes: number[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    if (target !== 'anon_inode:inotify') continue;
    for (const line of readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8').split('\n')) {
      const ino = /^inotify wd:\d+ ino:([0-9a-f]+)/.exec(line)?.[1];
      if (ino) inodes.push(parseInt(ino, 16));
    }
  }
  return inodes;
}

type Wait = { appeared: { id: string; to: string | null; parent: string | null }[]; cursor: string; timedOut: boolean };

const call = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(result.isError, true, textOf(result));
  return result.structuredContent as Record<string, unknown>;
};
const waitFor = (client: Client, args: Record<string, unknown>) => call(client, 'wait_for_relay', { timeout_ms: 20_000, ...args }) as Promise<Wait>;

async function reader(t: Parameters<typeof stdioClient>[0], corpus: string) {
  const { client, transport } = await stdioClient(t, corpus);
  await call(client, 'exists', { id: 'relay-0001' }); // the start-up scan is done
  return { client, pid: transport.pid! };
}

test('a process whose wait filters on to watches just its bells, and the corpus directory only while a wait wants every record', async (t) => {
  const { corpus } = await tempStore(t);
  const { client, pid } = await reader(t, corpus);
  const corpusInode = statSync(corpus).ino;
  const filtered = waitFor(client, { to: ['scout-7', 'all'], after: 'relay-0000' });
  await eventually(() => watchedInodes(pid).length === 2, 'a watch on each of its two bells');
  assert.ok(!watchedInodes(pid).includes(corpusInode), 'the corpus directory is not watched');
  const unfiltered = waitFor(client, { after: 'relay-0000' });
  await eventually(() => watchedInodes(pid).includes(corpusInode), 'the directory watched for the unfiltered wait');

  const { client: writer } = await stdioClient(t, corpus);
  await call(writer, 'append_relay', { bytes: record({ to: 'all' }) });
  assert.deepEqual((await filtered).appeared.map((r) => r.id), ['relay-0001']);
  assert.deepEqual((await unfiltered).appeared.map((r) => r.id), ['relay-0001']);
});

test('a record naming several recipients rings each one\'s bell: waits for either, in two processes, both answer it', async (t) => {
  const { corpus } = await tempStore(t);
  const [a, b] = await Promise.all([reader(t, corpus), reader(t, corpus)]);
  const waits = [waitFor(a.client, { to: 'scout-7', after: 'relay-0000' }), waitFor(b.client, { to: 'scout-8', after: 'relay-0000' })];
  await eventually(() => watchedInodes(a.pid).length === 1 && watchedInodes(b.pid).length === 1, 'each wait listening to its bell');
  const { client: writer } = await stdioClient(t, corpus);
  await call(writer, 'append_relay', { bytes: record({ to: 'someone-else' }) });
  await call(writer, 'append_relay', { bytes: record({ to: 'scout-8, scout-7' }) });
  for (const wait of waits) {
    const answer = await wait;
    assert.deepEqual(answer.appeared.map((r) => r.id), ['relay-0002'], 'only the record addressed to it');
    assert.equal(answer.cursor, 'relay-0002', 'the cursor covers the record it was not woken for');
  }
});

test('a replies_to wait in one process is woken by a reply another process appends', async (t) => {
  const { corpus } = await tempStore(t);
  const { client, pid } = await reader(t, corpus);
  const question = (await call(client, 'append_relay', { bytes: record({ kind: 'question', to: 'scout-8' }) })).id as string;
  const waiting = waitFor(client, { replies_to: question, after: question });
  await eventually(() => watchedInodes(pid).length === 1, 'the wait listening to the question\'s bell');
  const { client: writer } = await stdioClient(t, corpus);
  await call(writer, 'append_relay', { bytes: record({ kind: 'note', to: 'scout-7' }) });
  await call(writer, 'append_relay', { bytes: record({ kind: 'answer', to: 'scout-7', parent: question }) });
  const answer = await waiting;
  assert.deepEqual(answer.appeared.map((r) => [r.id, r.parent]), [['relay-0003', question]]);
});

test('a filtered wait that times out answers a cursor past the records that landed meanwhile, though none woke it', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await reader(t, corpus);
  const { client: writer } = await stdioClient(t, corpus);
  const waiting = waitFor(client, { to: 'scout-7', after: 'relay-0000', timeout_ms: 1000 });
  for (const to of ['scout-8', 'scout-9', 'all']) await call(writer, 'append_relay', { bytes: record({ to }) });
  const answer = await waiting;
  assert.deepEqual([answer.appeared, answer.timedOut, answer.cursor], [[], true, 'relay-0003']);
});

test('a record another writer links in without ringing (a plain copy) reaches a filtered wait at the next listing', async (t) => {
  const store = await openTempStore(t, { reconcileMs: 100 });
  const waiting = store.wait({ after: 'relay-0000', timeoutMs: 20_000, filter: { to: new Set(['scout-7']) } });
  await eventually(() => store.listening.bells === 1, 'the wait listening to its bell');
  assert.equal(store.listening.directory, false);
  const bytes = Buffer.from(record({ to: 'scout-7' }, 'copied in by hand'));
  const file = buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp/elsewhere', depositedAt: new Date().toISOString(), digest: digestOf(bytes) }, bytes);
  const temp = path.join(store.paths.corpus, '.relay-0001.copy');
  await writeFile(temp, file);
  await link(temp, path.join(store.paths.corpus, 'relay-0001'));
  await unlink(temp);
  const answer = await waiting;
  assert.deepEqual(answer.appeared.map((r) => r.id), ['relay-0001']);
});

test('bells removed under a blocked wait are made again, and the wait still hears its record', async (t) => {
  const { corpus } = await tempStore(t);
  const { client, pid } = await reader(t, corpus);
  const waiting = waitFor(client, { to: 'scout-7', after: 'relay-0000' });
  await eventually(() => watchedInodes(pid).length === 1, 'the wait listening to its bell');
  const bells = path.join(corpus, '.state', 'bells');
  await rm(bells, { recursive: true, maxRetries: 10, retryDelay: 5 }); // the server may make the bell again mid-removal
  // The new file may reuse the old inode's number: what counts is a watch on the file there now.
  const watchedNow = () => readdirSync(bells).some((name) => watchedInodes(pid).includes(statSync(path.join(bells, name)).ino));
  await eventually(() => existsSync(bells) && watchedNow(), 'a watch on the bell made again');
  const { client: writer } = await stdioClient(t, corpus);
  await call(writer, 'append_relay', { bytes: record({ to: 'scout-7' }) });
  assert.deepEqual((await waiting).appeared.map((r) => r.id), ['relay-0001']);
});

test('with --wake directory a filtered wait watches the corpus directory, as before bells', async (t) => {
  const { corpus } = await tempStore(t);
  const { client, transport } = await stdioClient(t, corpus, ['--wake', 'directory']);
  await call(client, 'exists', { id: 'relay-0001' });
  const waiting = waitFor(client, { to: 'scout-7', after: 'relay-0000', timeout_ms: 300 });
  await eventually(() => watchedInodes(transport.pid!).includes(statSync(corpus).ino), 'the directory watched');
  assert.equal(watchedInodes(transport.pid!).length, 1, 'and no bell');
  await waiting;
});

test('a re-deposit filling in an id below the highest reaches a filtered wait in another store at once, not at the next listing', async (t) => {
  const { corpus } = await tempStore(t);
  const writer = await openStore({ corpus, reconcileMs: 60_000 });
  t.after(() => writer.close());
  for (const headers of [{ to: 'x' }, { to: 'x' }, { to: 'x', ref: 'relay-0002' }] as Record<string, string>[]) await writer.append(Buffer.from(record(headers)), { depositedBy: 'test' });
  await unlink(path.join(corpus, 'relay-0002')); // lost: relay-0003 still cites it
  await assert.rejects(writer.read('relay-0002')); // the writer notices it is gone
  const reader = await openStore({ corpus, reconcileMs: 60_000 }); // no listing will come to the rescue
  t.after(() => reader.close());
  assert.equal((await reader.exists('relay-0002')).state, 'KNOWN_MISSING');
  const waiting = reader.wait({ after: 'relay-0001', timeoutMs: 20_000, filter: { to: new Set(['scout-7']) } });
  await eventually(() => reader.listening.bells === 1, 'the wait listening to its bell');
  const redeposit = await writer.append(Buffer.from(record({ to: 'scout-7' }, 'the lost record, again')), { depositedBy: 'test', id: 'relay-0002' });
  assert.equal(redeposit.id, 'relay-0002');
  const answer = await waiting;
  assert.deepEqual([answer.appeared.map((r) => r.id), answer.timedOut], [['relay-0002'], false]);
});
