/**
 * The doors that follow the store, from an old mark on a store bigger than
 * one answer: the CLI's one-shot `wait` answers at most WAIT_MAX_ITEMS (the
 * cap wait_for_relay answers, from the same store function) with a cursor
 * and says how to go on; GET /events streams the whole catch-up, in
 * batches, at the pace its reader takes it, then what landed meanwhile.
 * Records are written straight to disk; the CLI and the hub are real child
 * processes, the stream real HTTP on loopback.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { openStore } from '../../lib/store/store.js';
import { WAIT_MAX_ITEMS } from '../../lib/store/follow/waiters.js';
import { record, runCli, tempStore } from '../support/helpers.js';
import { spawnHub } from '../support/hub-process.js';
import { sseReader } from '../support/http-helpers.js';

const idOf = (width: number) => (n: number) => `relay-${String(n).padStart(width, '0')}`;

/** Writes records 1…count straight to disk, as another writer (or rsync) would. */
async function writeRecords(corpus: string, width: number, count: number, headers: (i: number) => Record<string, string>): Promise<void> {
  for (let i = 1; i <= count; i++) {
    const bytes = Buffer.from(record(headers(i), `record ${i}`));
    const deposit = { provenance: 'as-received' as const, depositedBy: 'test', depositedAt: new Date(0).toISOString(), digest: digestOf(bytes) };
    writeFileSync(path.join(corpus, idOf(width)(i)), buildRecordFile(deposit, bytes)); // synchronously: a thread-pool round trip each saved
  }
}

test('CLI wait from the start of a store past the cap prints the lowest 10,000 and its cursor, says on stderr how to go on, and the next run from the cursor prints the rest', async (t) => {
  const id = idOf(5);
  const { corpus } = await tempStore(t, { idWidth: 5 });
  await writeRecords(corpus, 5, WAIT_MAX_ITEMS + 50, (i) => ({ kind: 'note', from: `agent-${i % 3}` }));

  const first = await runCli(['wait', '--corpus', corpus, '--after', id(0), '--timeout', '0']);
  assert.equal(first.code, 0, first.stderr);
  const lines = first.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, new RegExp(`^${WAIT_MAX_ITEMS} appeared after \\d+ ms:$`));
  assert.deepEqual(lines.slice(1, -1).map((line) => line.split(' ')[0]), Array.from({ length: WAIT_MAX_ITEMS }, (_, k) => id(k + 1)));
  assert.equal(lines.at(-1), `cursor: ${id(WAIT_MAX_ITEMS)} (to read on from there, pass it as after)`);
  assert.match(first.stderr, new RegExp(`run it again with --after ${id(WAIT_MAX_ITEMS)}`));

  const rest = await runCli(['wait', '--corpus', corpus, '--after', id(WAIT_MAX_ITEMS), '--timeout', '0']);
  assert.equal(rest.code, 0, rest.stderr);
  const more = rest.stdout.trimEnd().split('\n');
  assert.deepEqual(more.slice(1, -1).map((line) => line.split(' ')[0]), Array.from({ length: 50 }, (_, k) => id(WAIT_MAX_ITEMS + k + 1)));
  assert.equal(more.at(-1), `cursor: ${id(WAIT_MAX_ITEMS + 50)} (to read on from there, pass it as after)`);
  assert.doesNotMatch(rest.stderr, /run it again/);
});

test('GET /events from the start streams a catch-up bigger than the socket takes, to a reader that stops and goes on: every held record once in id order, then what landed meanwhile', { timeout: 60_000 }, async (t) => {
  const id = idOf(4);
  const { corpus, keys } = await tempStore(t);
  // More records than one batch from the index (1,024), and ~14 MB of events
  // (a wide kind: header, interned once by the hub): over three times what
  // a stalled loopback socket takes (~4 MB), so the hub's catch-up is held
  // back by the stopped reader while the live records land (its walk and
  // its backlog both see them: each must reach the reader once). The last
  // few are small: the catch-up ends with a partial write, which must still
  // go out.
  const held = 1101;
  const wide = 'k'.repeat(12_000);
  await writeRecords(corpus, 4, held, (i) => ({ kind: i <= held - 3 ? wide : 'note' }));
  for (const agent of ['reader', 'watcher']) await addKey(keys, agent);
  const hub = await spawnHub({ corpus, keys, cleanup: t, until: 'scanned' });
  const sign = async (agent: string) => authorizationFor(agent, (await readKey(keys, agent))!, 'GET', new Uint8Array());

  // The stopping reader speaks HTTP on a raw socket: node's http client keeps
  // reading into its own buffers while paused, a paused socket does not.
  const socket = net.connect(hub.port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.write(`GET /events?after=${id(0)} HTTP/1.1\r\nHost: 127.0.0.1:${hub.port}\r\nAuthorization: ${await sign('reader')}\r\n\r\n`);
  let text = '';
  const ids: string[] = [];
  const read = (until: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        text += chunk.toString('latin1');
        // Each write of the hub is one HTTP chunk of whole events, so chunk-size lines never split an event.
        const whole = text.lastIndexOf('\n\n');
        for (const m of text.slice(0, whole + 1).matchAll(/\nid: (relay-\d+)\n/g)) ids.push(m[1]!);
        text = text.slice(whole + 1);
        if (until()) {
          socket.off('data', onData).off('close', onClose).pause();
          resolve();
        }
      };
      const onClose = () => reject(new Error(`the stream ended after ${ids.length} events, the last ${ids.at(-1)}; hub: ${hub.stderr()}`));
      socket.on('data', onData).on('close', onClose).resume();
    });
  await read(() => ids.length > 0); // the catch-up has begun; now the reader stops

  // Another writer appends; a second stream shows the hub has announced them.
  const watcher = sseReader(await fetch(`${hub.url}/events?after=${id(held)}`, { headers: { Authorization: await sign('watcher') } }));
  t.after(() => watcher.close());
  const writer = await openStore({ corpus, watch: 'none' });
  const landed: string[] = [];
  for (let i = 0; i < 3; i++) landed.push((await writer.append(Buffer.from(record({ kind: 'note' }, `live ${i}`)), { depositedBy: 'cli/test' })).id);
  await writer.close();
  for (const expected of landed) assert.equal((await watcher.next(10_000)).id, expected);

  await read(() => ids.length >= held + landed.length);
  assert.deepEqual(ids, [...Array.from({ length: held }, (_, k) => id(k + 1)), ...landed]);
  // Streams and hub end here, before the temp directory goes: after hooks run in the order registered,
  // and tempStore's removal comes first. (A hub whose keys/ was removed as SIGTERM came once never
  // exited, its key watcher started again by chokidar: test/http/shutdown.process.test.ts.)
  socket.destroy();
  watcher.close();
  await hub.stop();
});
