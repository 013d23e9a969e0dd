/**
 * A network mount that drops mid-append, without the network: the LD_PRELOAD
 * shim (test/fixtures/fs-lies.c, FS_LIES=lost-mount) makes a local corpus
 * behave as an sshfs or GlusterFS client whose connection is lost under a
 * link() — the file server made the link, the answer is ENOTCONN (or EIO,
 * ESTALE, ECONNABORTED), and for the next few hundred ms every call under
 * the corpus fails the same way — into real server, CLI and bridge
 * processes.
 *
 * The real thing (the ssh connection under an sshfs mount killed while
 * writers append) is in test/system/beds/multi-host.ts (and GlusterFS in test/system/beds/gluster.ts), behind P_E_RELAY_MULTIHOST=1.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { ERROR_META_KEY } from '../../lib/mcp/result.js';
import { splitRecordFile } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { lostConnectionCode } from '../../lib/disk/lost-mount.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { bridgeClient, hubStore } from '../support/bridge-helpers.js';
import { record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { shim } from '../support/fs-lies.js';
import { spawnHub } from '../support/hub-process.js';
import { eventually } from '../support/poll.js';

const shape = idShape();

/** The shim's environment: the mount drops under the `dropEvery`-th link and is back `downMs` later. */
function droppingEnv(so: string, corpus: string, lies: string, errno: string, dropEvery: number, downMs = 300): Record<string, string> {
  // Only record links count: the key's claim and the replay guard link too, and the drop must hit the record's.
  return { LD_PRELOAD: so, FS_LIES: 'lost-mount', FS_LIES_DIR: corpus, FS_LIES_LOG: lies, FS_LIES_DROP_ERRNO: errno, FS_LIES_DROP_EVERY: String(dropEvery), FS_LIES_DROP_MATCH: '/relay-', FS_LIES_DOWN_MS: String(downMs), P_E_RELAY_SHARED_FS: '1' };
}

/** Every record file's body → the ids it is stored under. */
async function storedBodies(corpus: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const name of (await readdir(corpus)).filter((n) => shape.parseRecordId(n) !== null).sort()) {
    const text = splitRecordFile(await readFile(path.join(corpus, name))).record.toString('utf8');
    out.set(text, [...(out.get(text) ?? []), name]);
  }
  return out;
}

async function liesTold(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean);
}

test('an append whose mount drops under its link is refused store_unreachable naming the corpus\'s filesystem, not its path; the same key again stores it once, and the stranded temp file goes once the mount is back', { timeout: 60_000 }, async (t) => {
  const so = await shim(t);
  if (so === null) return;
  const { corpus, dir } = await tempStore(t);
  const lies = path.join(dir, 'lies.log');
  const { client } = await stdioClient(t, corpus, [], droppingEnv(so, corpus, lies, 'ENOTCONN', 2));
  const first = (await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note' }, 'before the drop\n') } })) as CallToolResult;
  assert.ok(!first.isError, textOf(first));
  const bytes = record({ kind: 'note' }, 'the link that lost its answer\n');
  const call = { name: 'append_relay', arguments: { bytes, idempotency_key: 'k-drop' } };
  const refused = (await client.callTool(call)) as CallToolResult;
  assert.equal(refused.isError, true, 'the lost answer is a refusal, not a success the store cannot vouch for');
  const meta = refused._meta?.[ERROR_META_KEY] as { code: string; errno: string; corpus?: string };
  assert.equal(meta.code, 'store_unreachable', textOf(refused));
  assert.equal(meta.errno, 'ENOTCONN');
  assert.match(textOf(refused), /^store_unreachable: The corpus \(on /, 'the sentence names the corpus and its filesystem');
  assert.ok(!textOf(refused).includes(corpus) && meta.corpus === undefined, `and no path, which a remote caller has no use for: ${textOf(refused)}`);
  assert.match(textOf(refused), /same idempotency_key/);
  assert.ok((await liesTold(lies)).some((l) => l.startsWith('dropped-link ')), 'the shim dropped a link that it had made');
  // The mount comes back within 300 ms; the retry reads the corpus first and finds the record the lost link stored.
  let again: CallToolResult | undefined;
  await eventually(async () => !(again = (await client.callTool(call)) as CallToolResult).isError, 'the retry under the same key is answered', { everyMs: 100 });
  const answered = again!.structuredContent as { id: string; replayed?: boolean };
  assert.equal(answered.id, 'relay-0002');
  assert.equal(answered.replayed, true, 'answered as the record the first try stored');
  assert.deepEqual((await storedBodies(corpus)).get(bytes), ['relay-0002'], 'stored once');
  await eventually(async () => (await readdir(corpusPaths(corpus).tmp)).length === 0, 'the temp file the drop stranded is removed', { everyMs: 100 });
});

for (const errno of ['ENOTCONN', 'EIO', 'ESTALE', 'ECONNABORTED']) {
  test(`\`p-e-relay append\` on a mount that drops with ${errno} under its link retries under its own key: one record, its id printed, no temp file left`, { timeout: 60_000 }, async (t) => {
    const so = await shim(t);
    if (so === null) return;
    const { corpus, dir } = await tempStore(t);
    const lies = path.join(dir, 'lies.log');
    const file = path.join(dir, 'record');
    const bytes = record({ kind: 'note' }, `through a ${errno}\n`);
    await writeFile(file, bytes);
    const result = await runCli(['append', '--corpus', corpus, file], { env: { ...droppingEnv(so, corpus, lies, errno, 1), P_E_RELAY_LOG: 'info' } });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.trim(), 'relay-0001');
    assert.match(result.stderr, new RegExp(`stopped answering \\(${errno}\\)`), 'it said it retried, and why');
    assert.deepEqual((await storedBodies(corpus)).get(bytes), ['relay-0001']);
    assert.ok((await liesTold(lies)).some((l) => l.startsWith('dropped-link ')));
    assert.deepEqual(await readdir(corpusPaths(corpus).tmp), [], 'no temp file left');
  });
}

test('the bridge sends an append its hub refused store_unreachable again under the same key: one record, answered', { timeout: 60_000 }, async (t) => {
  const so = await shim(t);
  if (so === null) return;
  const store = await hubStore(t);
  const lies = path.join(path.dirname(store.corpus), 'lies.log');
  const hub = await spawnHub({ ...store, cleanup: t, env: { ...droppingEnv(so, store.corpus, lies, 'ENOTCONN', 1), P_E_RELAY_LOG: 'info' } });
  const { client, stderr } = await bridgeClient(t, hub.url, 'scout-7', store.keys);
  await client.listTools(); // as every client does first: the bridge learns the hub takes keys
  const bytes = record({ kind: 'note', from: 'scout-7' }, 'over the bridge\n');
  const result = (await client.callTool({ name: 'append_relay', arguments: { bytes } })) as CallToolResult;
  assert.ok(!result.isError, `${textOf(result)}\n${stderr()}\n${hub.stderr()}\n${await readFile(lies, 'utf8')}`);
  const answer = result.structuredContent as { id: string; replayed?: boolean };
  assert.equal(answer.id, 'relay-0001');
  assert.equal(answer.replayed, true, 'the retry answered the record the dropped link had stored');
  assert.deepEqual((await storedBodies(store.corpus)).get(bytes), ['relay-0001'], 'stored once');
  assert.ok((await liesTold(lies)).some((l) => l.startsWith('dropped-link ')), 'the hub met the dropped link');
});

test('EIO is a lost connection only on a network mount; the socket codes likewise; ENOTCONN and ESTALE anywhere', () => {
  const err = (code: string) => Object.assign(new Error(code), { code });
  assert.equal(lostConnectionCode(err('EIO'), true), 'EIO');
  assert.equal(lostConnectionCode(err('EIO'), false), null, 'a local disk\'s EIO is the disk');
  assert.equal(lostConnectionCode(err('ECONNRESET'), true), 'ECONNRESET');
  assert.equal(lostConnectionCode(err('ECONNRESET'), false), null);
  assert.equal(lostConnectionCode(err('ENOTCONN'), false), 'ENOTCONN');
  assert.equal(lostConnectionCode(Object.assign(new Error('Unknown system error -116'), { code: 'Unknown system error -116', errno: -116 }), false), 'ESTALE', 'as Node reports ESTALE, which libuv does not name');
  assert.equal(lostConnectionCode(err('ENOSPC'), true), null);
});
