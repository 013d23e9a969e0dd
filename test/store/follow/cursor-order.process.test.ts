/**
 * The cursor's promise (spec §8a) when appends overlap: an agent that always
 * passes the cursor back as `after` sees every record exactly once, even
 * while several appends are in flight in each of several processes. Two
 * appends in flight in one process used to race their link() calls, so
 * that id N+1 could appear before N: a wait elsewhere answered N+1 with
 * cursor N+1, and N was never seen. Which link lands first is timing, so
 * the writers run under the LD_PRELOAD shim (test/fixtures/fs-lies.c) with
 * every other link() slow by 30 ms, as one round trip to a file server can
 * be: an append that started later then lands first unless this process
 * links in id order. Readers in another process and in the appending one
 * are both checked, and a writer killed with appends in flight must leave
 * nothing that holds a cursor back.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { record, stdioClient, tempStore, textOf } from '../../support/helpers.js';
import { shim } from '../../support/fs-lies.js';
import { eventually } from '../../support/poll.js';

const WRITERS = 4;
const ROUNDS = 6;
/** Appends each writer process has in flight at once. */
const IN_FLIGHT = 4;

for (const filtered of [false, true]) {
  const how = filtered ? 'a loop filtered on to (woken by bells)' : 'an unfiltered cursor loop (woken by the directory)';
  test(`${how} sees every record it filters for exactly once while four processes each have four appends in flight, every other link slow`, (t) => cursorLoopUnderSlowLinks(t, filtered));
}

/** Half the records are addressed to the reader; `filtered` loops on to: me (bells), else on everything (the directory watch). */
async function cursorLoopUnderSlowLinks(t: TestContext, filtered: boolean): Promise<void> {
  const so = await shim(t);
  if (so === null) return;
  const { dir, corpus } = await tempStore(t);
  const lies = path.join(dir, 'lies.log');
  const slowLinks = { LD_PRELOAD: so, FS_LIES_DIR: corpus, FS_LIES_LOG: lies, FS_LIES_SLOW_EVERY: '2', FS_LIES_SLOW_MS: '30' };
  const [reader, ...writers] = await Promise.all(Array.from({ length: WRITERS + 1 }, (_, i) => stdioClient(t, corpus, [], i === 0 ? {} : slowLinks).then((c) => c.client)));
  assert.ok(reader);
  // The reader's store is open and watching before the first append.
  await reader.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 0, ...(filtered ? { to: 'me' } : {}) } });

  const appended: string[] = [];
  let writing = true;
  const write = Promise.all(
    writers.map(async (client, p) => {
      for (let round = 0; round < ROUNDS; round++) {
        const results = await Promise.all(
          Array.from({ length: IN_FLIGHT }, (_, k) => client.callTool({ name: 'append_relay', arguments: { bytes: record({ from: `w${p}`, to: k % 2 ? 'me' : 'someone-else' }, `${p}/${round}/${k}`) } }) as Promise<CallToolResult>),
        );
        for (const [k, result] of results.entries()) {
          assert.notEqual(result.isError, true, textOf(result));
          if (!filtered || k % 2) appended.push((result.structuredContent as { id: string }).id);
        }
      }
    }),
  ).finally(() => (writing = false));

  const seen: string[] = [];
  let cursor = 'relay-0000';
  const deadline = Date.now() + 90_000;
  // Until the writers are done and a wait from the last cursor finds nothing more.
  for (;;) {
    assert.ok(Date.now() < deadline, `the loop saw ${seen.length} of ${WRITERS * ROUNDS * IN_FLIGHT} records in time`);
    const done = !writing;
    const result = (await reader.callTool({ name: 'wait_for_relay', arguments: { after: cursor, timeout_ms: done ? 1000 : 500, ...(filtered ? { to: 'me' } : {}) } })) as CallToolResult;
    assert.notEqual(result.isError, true, textOf(result));
    const answer = result.structuredContent as { appeared: { id: string; to: string }[]; cursor: string; timedOut: boolean };
    for (const item of answer.appeared) {
      if (filtered) assert.equal(item.to, 'me', `${item.id} is not addressed to the reader`);
      assert.ok(item.id > cursor, `${item.id} came back although the cursor passed was ${cursor}`);
      assert.ok(item.id <= answer.cursor, `${item.id} lies beyond the cursor ${answer.cursor} answered with it`);
      seen.push(item.id);
    }
    assert.ok(answer.cursor >= cursor, 'the cursor never moves back');
    cursor = answer.cursor;
    if (done && answer.timedOut) break;
  }
  await write;
  assert.ok((await readFile(lies, 'utf8')).includes('slow-link'), 'the shim slowed links down');
  assert.equal(appended.length, (WRITERS * ROUNDS * IN_FLIGHT) / (filtered ? 2 : 1));
  assert.equal(new Set(seen).size, seen.length, 'no record was seen twice');
  const missed = appended.filter((id) => !seen.includes(id)).sort();
  assert.deepEqual(missed, [], 'every record appended was seen by the cursor loop');
  assert.equal(seen.length, appended.length);
}

test('a cursor loop in the process that appends sees every record exactly once while six appends are in flight there, every other link slow', async (t) => {
  const so = await shim(t);
  if (so === null) return;
  const { dir, corpus } = await tempStore(t);
  const lies = path.join(dir, 'lies.log');
  // One server: its own appends race each other, and its own waits answer them.
  const { client } = await stdioClient(t, corpus, [], { LD_PRELOAD: so, FS_LIES_DIR: corpus, FS_LIES_LOG: lies, FS_LIES_SLOW_EVERY: '2', FS_LIES_SLOW_MS: '30' });
  await client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 0 } });

  const appended: string[] = [];
  let writing = true;
  const write = (async () => {
    for (let round = 0; round < ROUNDS * 2; round++) {
      const results = await Promise.all(Array.from({ length: 6 }, (_, k) => client.callTool({ name: 'append_relay', arguments: { bytes: record({ from: 'w' }, `${round}/${k}`) } }) as Promise<CallToolResult>));
      for (const result of results) {
        assert.notEqual(result.isError, true, textOf(result));
        appended.push((result.structuredContent as { id: string }).id);
      }
    }
  })().finally(() => (writing = false));

  const seen: string[] = [];
  let cursor = 'relay-0000';
  const deadline = Date.now() + 90_000;
  for (;;) {
    assert.ok(Date.now() < deadline, `the loop saw ${seen.length} of ${ROUNDS * 12} records in time`);
    const done = !writing;
    const result = (await client.callTool({ name: 'wait_for_relay', arguments: { after: cursor, timeout_ms: done ? 1000 : 500 } })) as CallToolResult;
    assert.notEqual(result.isError, true, textOf(result));
    const answer = result.structuredContent as { appeared: { id: string }[]; cursor: string; timedOut: boolean };
    for (const item of answer.appeared) seen.push(item.id);
    cursor = answer.cursor;
    if (done && answer.timedOut) break;
  }
  await write;
  assert.ok((await readFile(lies, 'utf8')).includes('slow-link'), 'the shim slowed links down');
  assert.equal(new Set(seen).size, seen.length, 'no record was seen twice');
  assert.deepEqual(appended.filter((id) => !seen.includes(id)).sort(), [], 'every record appended was seen by the cursor loop');
});

test('a writer killed with appends in flight leaves nothing the cursor waits for: the next wait covers every record on disk', async (t) => {
  const so = await shim(t);
  if (so === null) return;
  const { dir, corpus } = await tempStore(t);
  const lies = path.join(dir, 'lies.log');
  const { client: reader } = await stdioClient(t, corpus);
  const writer = await stdioClient(t, corpus, [], { LD_PRELOAD: so, FS_LIES_DIR: corpus, FS_LIES_LOG: lies, FS_LIES_SLOW_EVERY: '2', FS_LIES_SLOW_MS: '200' });
  const first = (await writer.client.callTool({ name: 'append_relay', arguments: { bytes: record({ from: 'w' }, 'before') } })) as CallToolResult;
  assert.notEqual(first.isError, true, textOf(first));
  // Six appends in flight, one of them inside a slow link(), when the writer dies.
  const inFlight = Array.from({ length: 6 }, (_, k) => writer.client.callTool({ name: 'append_relay', arguments: { bytes: record({ from: 'w' }, `in flight ${k}`) } }).catch(() => null));
  await eventually(async () => (await readFile(lies, 'utf8').catch(() => '')).includes('slow-link'), 'a link() inside the shim\'s pause');
  process.kill(writer.transport.pid!, 'SIGKILL');
  await Promise.all(inFlight);

  const listed = (await reader.callTool({ name: 'list_relays', arguments: {} })).structuredContent as { present: string[] };
  const highest = listed.present.at(-1)!;
  const answer = (await reader.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 300 } })).structuredContent as { appeared: { id: string }[]; cursor: string };
  assert.deepEqual(answer.appeared.map((r) => r.id), listed.present, 'every record on disk is answered');
  assert.equal(answer.cursor, highest, 'the cursor covers every record on disk; no id taken by the dead writer holds it back');
});
