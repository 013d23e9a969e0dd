/**
 * Things done behind the store's back, to a running server: a record
 * removed, a record edited or cut short, the whole corpus directory taken
 * away and brought back (as-is, or as a fresh copy without .state/), files
 * named like records that are not regular files. Each is
 * reported clearly (a log line on stderr, a refusal to the caller) and the
 * server goes on serving what it still can; no id is ever handed out twice.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, rename, rm, stat, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { Client } from '@modelcontextprotocol/client';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { errorCode, record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { sign } from '../support/http-helpers.js';
import { hubProcess } from '../support/reliability-helpers.js';
import { eventually } from '../support/poll.js';

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ code?: string; text: string; sc: Record<string, unknown> | undefined }> {
  const result = await client.callTool({ name, arguments: args });
  return { code: errorCode(result), text: textOf(result), sc: result.structuredContent as Record<string, unknown> | undefined };
}

async function appendId(client: Client, bytes: string): Promise<string> {
  const answer = await call(client, 'append_relay', { bytes });
  assert.equal(answer.code, undefined, answer.text);
  return answer.sc!.id as string;
}

/** A stdio server that logs at info, so its stderr says what it noticed. */
async function server(t: Parameters<typeof stdioClient>[0], corpus: string) {
  return stdioClient(t, corpus, [], { P_E_RELAY_LOG: 'info' });
}

test('a record removed behind the server\'s back is logged and dropped; its id is never handed out again and can be re-deposited', async (t) => {
  const { corpus } = await tempStore(t);
  const { client, stderr } = await server(t, corpus);
  await appendId(client, record({ kind: 'question' }));
  const lost = record({ kind: 'answer', parent: 'relay-0001' });
  await appendId(client, lost);
  await appendId(client, record({ kind: 'follow-up', parent: 'relay-0002' }));

  await unlink(path.join(corpus, 'relay-0002'));
  await eventually(() => /relay-0002 vanished from disk; dropped from the index/.test(stderr()), 'the server to log the vanished record');
  assert.equal((await call(client, 'exists', { id: 'relay-0002' })).text, 'relay-0002 KNOWN_MISSING', 'relay-0003 still names it');
  const get = await call(client, 'get_relay', { id: 'relay-0002' });
  assert.equal(get.code, 'not_found');
  assert.match(get.text, /KNOWN_MISSING/);
  assert.equal((await call(client, 'list_relays')).text, 'present (2): relay-0001 relay-0003\nknown missing (1): relay-0002');

  assert.equal(await appendId(client, record({ kind: 'new' })), 'relay-0004', 'the vanished id is not reused');
  assert.equal((await call(client, 'append_relay', { id: 'relay-0002', bytes: lost })).sc?.id, 'relay-0002', 'the lost record is re-deposited under its id');
});

test('a record edited or cut short behind the server\'s back is refused as damaged, named by verify and logged at start; the rest is served', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await server(t, corpus);
  for (const body of ['first', 'second', 'third']) await appendId(client, record({ kind: 'note' }, body));
  const file1 = path.join(corpus, 'relay-0001');
  const file2 = path.join(corpus, 'relay-0002');
  // An edit of one byte, same length (the kind an editor or a bad disk makes), and a truncation (a half-written copy).
  await writeFile(file1, (await readFile(file1, 'utf8')).replace(/first$/, 'fir5t'));
  await truncate(file2, (await readFile(file2)).length - 3);

  for (const id of ['relay-0001', 'relay-0002']) {
    const get = await call(client, 'get_relay', { id });
    assert.equal(get.code, 'damaged', get.text);
    assert.match(get.text, /not returned as if it were whole.*p-e-relay verify/);
    assert.equal((await call(client, 'exists', { id })).text, `${id} PRESENT`, 'the bytes are held, just not whole');
  }
  assert.equal((await call(client, 'get_relay', { id: 'relay-0003' })).code, undefined, 'a whole record is still served');
  assert.equal(await appendId(client, record({ kind: 'still-appending' })), 'relay-0004');

  const verify = await runCli(['verify', '--corpus', corpus]);
  assert.equal(verify.code, 1);
  assert.match(verify.stdout, /^damaged relay-0001: its bytes no longer match the digest/m);
  assert.match(verify.stdout, /^damaged relay-0002: /m);
  assert.match(verify.stdout, /4 records checked, 2 damaged/);

  // A server starting on the corpus says so in its log, and still serves the rest.
  const fresh = await server(t, corpus);
  assert.deepEqual((await call(fresh.client, 'list_relays')).sc?.present, ['relay-0001', 'relay-0002', 'relay-0003', 'relay-0004']);
  assert.match(fresh.stderr(), /relay-0001 is damaged and is held but not served/);
  assert.match(fresh.stderr(), /relay-0002 is damaged and is held but not served/);
  assert.equal((await call(fresh.client, 'get_relay', { id: 'relay-0004' })).code, undefined);
});

test('the corpus directory taken away and put back: appends are refused meanwhile with a sentence, reads answer from the index, and all works again after', async (t) => {
  const { dir, corpus } = await tempStore(t);
  const { client, stderr } = await server(t, corpus);
  await appendId(client, record({ kind: 'before' }));
  const away = path.join(dir, 'corpus-away');

  await rename(corpus, away);
  const refused = await call(client, 'append_relay', { bytes: record({ kind: 'while-away' }) });
  assert.equal(refused.code, 'no_corpus', refused.text);
  assert.match(refused.text, /corpus directory is gone.*nothing was stored/);
  assert.equal((await call(client, 'exists', { id: 'relay-0001' })).text, 'relay-0001 PRESENT', 'the index still answers');
  await eventually(() => /cannot read the corpus directory .*serving what is already indexed/.test(stderr()), 'the server to log that the corpus is gone', { timeoutMs: 10_000 });

  await rename(away, corpus);
  await eventually(() => /the corpus directory .* is back/.test(stderr()), 'the server to log that the corpus is back', { timeoutMs: 10_000 });
  assert.equal(await appendId(client, record({ kind: 'after' })), 'relay-0002');
  const other = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'from-the-cli' }) });
  assert.equal(other.stdout.trim(), 'relay-0003', other.stderr);
  await eventually(async () => (await call(client, 'exists', { id: 'relay-0003' })).text === 'relay-0003 PRESENT', 'the server to see an append by another process');
});

test('the corpus replaced by a fresh copy without .state/ (a restore, a re-clone): the server writes into the new directory and keeps its ids', async (t) => {
  const { dir, corpus } = await tempStore(t);
  const { client, stderr } = await server(t, corpus);
  await appendId(client, record({ kind: 'one' }));
  await appendId(client, record({ kind: 'two' }));
  // relay-0002's file is lost later; the high-water log is what keeps its id from being handed out again.
  const copy = path.join(dir, 'restored');
  await cp(corpus, copy, { recursive: true, filter: (src) => !src.includes(`${path.sep}.state`) });
  await rm(corpus, { recursive: true });
  await rename(copy, corpus);
  await eventually(() => /the corpus directory .* was replaced by another directory/.test(stderr()), 'the server to notice the new directory', { timeoutMs: 10_000 });

  assert.equal(await appendId(client, record({ kind: 'three' })), 'relay-0003', 'appends work in the new directory');
  const issued = await readFile(corpusPaths(corpus).issued, 'utf8').catch(() => '');
  assert.match(issued, /^relay-0003( |$)/m, 'the id is noted in the new directory\'s high-water log, not in the deleted one');

  // relay-0003's file is lost; the next append anywhere must not take its id again.
  await unlink(path.join(corpus, 'relay-0003'));
  const next = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'four' }) });
  assert.equal(next.stdout.trim(), 'relay-0004', next.stderr);

  // Another process appends; this server is woken by the kernel's events on the new directory, not only by its periodic scan.
  const wait = call(client, 'wait_for_relay', { after: 'relay-0004', timeout_ms: 1500 });
  await runCli(['append', '--corpus', corpus], { input: record({ kind: 'five' }) });
  const woke = await wait;
  assert.deepEqual((woke.sc?.appeared as { id: string }[]).map((a) => a.id), ['relay-0005'], woke.text);
});

test('a FIFO, a directory and a symlink to /dev/zero named like records (rsync -a and git can bring them) never block or exhaust the server: each is damaged, and verify names them and ends', { timeout: 30_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  const first = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'whole' }) });
  assert.equal(first.stdout.trim(), 'relay-0001', first.stderr);
  await promisify(execFile)('mkfifo', [path.join(corpus, 'relay-0002')]);
  await mkdir(path.join(corpus, 'relay-0003'));
  await symlink('/dev/zero', path.join(corpus, 'relay-0004'));

  const { client, stderr } = await server(t, corpus);
  const listed = await call(client, 'list_relays');
  assert.deepEqual(listed.sc?.present, ['relay-0001', 'relay-0002', 'relay-0003', 'relay-0004'], 'held, as the names are there');
  for (const id of ['relay-0002', 'relay-0003', 'relay-0004']) {
    const get = await call(client, 'get_relay', { id });
    assert.equal(get.code, 'damaged', `${id}: ${get.text}`);
    assert.match(stderr(), new RegExp(`${id} is damaged and is held but not served`));
  }
  assert.equal((await call(client, 'get_relay', { id: 'relay-0001' })).code, undefined, 'the whole record is served');
  assert.equal(await appendId(client, record({ kind: 'after' })), 'relay-0005');

  const verify = await runCli(['verify', '--corpus', corpus]);
  assert.equal(verify.code, 1);
  for (const id of ['relay-0002', 'relay-0003', 'relay-0004']) assert.match(verify.stdout, new RegExp(`^damaged ${id}: `, 'm'));
  assert.match(verify.stdout, /5 records checked, 3 damaged/);
});

test('.state/ removed behind a running server (git clean -fdx does it): the next append makes it again, and the high-water mark survives', async (t) => {
  const { corpus } = await tempStore(t);
  const { client, stderr } = await server(t, corpus);
  await appendId(client, record({ kind: 'one' }));
  await appendId(client, record({ kind: 'two' }));
  await rm(corpusPaths(corpus).state, { recursive: true });

  assert.equal(await appendId(client, record({ kind: 'three' })), 'relay-0003', 'the append is not refused');
  assert.match(stderr(), /\.state\/tmp was missing/);
  assert.match(await readFile(corpusPaths(corpus).issued, 'utf8'), /^relay-0003( |$)/m, 'the new .state/issued holds the high-water mark');
  // relay-0003's file is lost; no process may hand its id out again.
  await unlink(path.join(corpus, 'relay-0003'));
  const next = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'four' }) });
  assert.equal(next.stdout.trim(), 'relay-0004', next.stderr);
});

test('a signed append to a hub whose corpus directory is gone is refused no_corpus, and the corpus is not recreated empty behind the operator\'s back', async (t) => {
  const { dir, corpus, keys } = await tempStore(t);
  await addKey(keys, 'alice');
  const key = (await readKey(keys, 'alice'))!;
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } });
  await rename(corpus, path.join(dir, 'corpus-away'));
  const body = record({ kind: 'while-away' });
  const res = await fetch(`${hub.url}/relays`, { method: 'POST', body, headers: { Authorization: sign('alice', key, 'POST', body) } });
  assert.equal(res.status, 503);
  assert.equal(((await res.json()) as { error: string }).error, 'no_corpus');
  await assert.rejects(stat(corpus), { code: 'ENOENT' }, 'no empty corpus was made in its place');
  assert.equal((await fetch(`${hub.url}/healthz`)).status, 200, 'the hub still serves');
});
