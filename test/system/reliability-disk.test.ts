/**
 * A full disk: a corpus on a small tmpfs filled to the brim, through every
 * door (a stdio server, the CLI, a signed HTTP hub). Appends are refused as
 * disk_full with a sentence that says what to do, nothing half-written or
 * stray is left, reads go on working, and appends work again once space is
 * freed, with no id lost to the failed attempts.
 *
 * Needs `mount -t tmpfs` (root, as here and in CI); skipped with a message
 * where mounting is refused.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs, { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { test, type TestContext } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { initStore } from '../../lib/ops/init.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { verifyCorpus } from '../../lib/ops/verify.js';
import { errorCode, record, runCli, stdioClient, textOf } from '../support/helpers.js';
import { sign } from '../support/http-helpers.js';
import { corpusFingerprint, hubProcess } from '../support/reliability-helpers.js';

const run = promisify(execFile);

/** Mounts a fresh tmpfs with these options, or says why it cannot (the test is then skipped). */
async function smallDisk(t: TestContext, options: string): Promise<string | null> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-disk-'));
  const mnt = path.join(dir, 'mnt');
  await fs.mkdir(mnt);
  // One hook, in this order: a lazy unmount lets go even while a server still has files open there.
  t.after(async () => {
    await run('umount', ['-l', mnt]).catch(() => {});
    await fs.rm(dir, { recursive: true, force: true });
  });
  try {
    await run('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', mnt]);
  } catch (err) {
    t.skip(`cannot mount a tmpfs here (${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}); the full-disk tests need root`);
    return null;
  }
  return mnt;
}

/** Writes into `file` until the filesystem refuses even one byte. */
async function fillToTheBrim(file: string): Promise<number> {
  const handle = await fs.open(file, 'a');
  let size = 0;
  try {
    for (const chunk of [Buffer.alloc(64 * 1024, 'f'), Buffer.alloc(1, 'f')]) {
      for (;;) {
        try {
          size += (await handle.write(chunk)).bytesWritten;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    await handle.close();
  }
  return size;
}

async function append(client: Client, bytes: string): Promise<{ code?: string; text: string; id?: string }> {
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes } });
  return { code: errorCode(result), text: textOf(result), id: (result.structuredContent as { id?: string } | undefined)?.id };
}

async function assertNothingWritten(corpus: string, before: Map<string, string>): Promise<void> {
  assert.deepEqual(await corpusFingerprint(corpus), before, 'no record, partial or whole, was added');
  assert.deepEqual(await fs.readdir(corpusPaths(corpus).tmp), [], 'no temp file was left in .state/tmp');
}

test('a full disk: appends through stdio, CLI and HTTP are refused as disk_full, nothing partial is left, reads go on, and appends resume once space is freed', { timeout: 60_000 }, async (t) => {
  const mnt = await smallDisk(t, 'size=2m');
  if (mnt === null) return;
  const corpus = path.join(mnt, 'corpus');
  const keys = path.join(path.dirname(mnt), 'keys'); // keys live off the small disk
  await initStore({ corpus, keys });
  await addKey(keys, 'filler');
  const key = (await readKey(keys, 'filler'))!;
  const { client } = await stdioClient(t, corpus);
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } });
  assert.equal((await append(client, record({ kind: 'before' }, 'one'))).id, 'relay-0001');
  assert.equal((await append(client, record({ kind: 'before' }, 'two'))).id, 'relay-0002');

  const filler = path.join(mnt, 'filler');
  const filled = await fillToTheBrim(filler);
  const before = await corpusFingerprint(corpus);

  // stdio: a refusal with the code and a sentence that says what to do.
  const viaStdio = await append(client, record({ kind: 'on-a-full-disk' }));
  assert.equal(viaStdio.code, 'disk_full', viaStdio.text);
  assert.match(viaStdio.text, /disk .*is full.*nothing was stored.*Free some space and send the same record again/);
  await assertNothingWritten(corpus, before);

  // the CLI: exit 1 and the same sentence on stderr.
  const viaCli = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'on-a-full-disk' }) });
  assert.equal(viaCli.code, 1);
  assert.match(viaCli.stderr, /is full.*Free some space/);
  await assertNothingWritten(corpus, before);

  // HTTP: 507 with the JSON error.
  const body = Buffer.from(record({ kind: 'on-a-full-disk' }, 'over http'));
  const res = await fetch(`${hub.url}/relays`, { method: 'POST', body, headers: { Authorization: sign('filler', key, 'POST', body) } });
  assert.equal(res.status, 507);
  assert.equal(((await res.json()) as { error: string }).error, 'disk_full');
  await assertNothingWritten(corpus, before);

  // A little room, and a record larger than it: the temp file is half-written when the disk runs out.
  await fs.truncate(filler, filled - 16 * 1024);
  const big = record({ kind: 'larger-than-the-room-left' }, randomBytes(150_000).toString('base64'));
  const half = await append(client, big);
  assert.equal(half.code, 'disk_full', half.text);
  await assertNothingWritten(corpus, before);

  // Reads keep working on the full disk.
  const got = await client.callTool({ name: 'get_relay', arguments: { id: 'relay-0001' } });
  assert.match(textOf(got), /\n---\n@p-e\/x0\nkind: before\n\none$/);
  assert.equal(textOf(await client.callTool({ name: 'list_relays', arguments: {} })), 'present (2): relay-0001 relay-0002\nknown missing (0):');
  const cliGet = await runCli(['get', 'relay-0002', '--corpus', corpus]);
  assert.equal(cliGet.code, 0, cliGet.stderr);
  assert.equal((await fetch(`${hub.url}/relays/relay-0002`)).status, 200);

  // Space returns: every door appends again, and the failed attempts took no id.
  await fs.rm(filler);
  assert.equal((await append(client, big)).id, 'relay-0003');
  const cliAfter = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'after' }) });
  assert.equal(cliAfter.stdout.trim(), 'relay-0004', cliAfter.stderr);
  // (a fresh body: the refused request's signature was spent, and in the same second it would sign the same)
  const retry = Buffer.from(record({ kind: 'after' }, 'over http'));
  const again = await fetch(`${hub.url}/relays`, { method: 'POST', body: retry, headers: { Authorization: sign('filler', key, 'POST', retry), Accept: 'application/json' } });
  assert.equal(again.status, 201);
  assert.equal(((await again.json()) as { id: string }).id, 'relay-0005');
  const report = await verifyCorpus(corpus);
  assert.equal(report.checked, 5);
  assert.deepEqual(report.damaged, []);
  assert.deepEqual(report.stray, []);
  assert.equal(hub.child.exitCode, null, 'the hub is still running');
});

test('out of inodes: the temp file cannot even be created; the append is refused as disk_full and works once files are freed', { timeout: 30_000 }, async (t) => {
  const mnt = await smallDisk(t, 'size=4m,nr_inodes=64');
  if (mnt === null) return;
  const corpus = path.join(mnt, 'corpus');
  await initStore({ corpus, keys: path.join(path.dirname(mnt), 'keys') });
  const { client } = await stdioClient(t, corpus);
  assert.equal((await append(client, record({ kind: 'before' }))).id, 'relay-0001');

  const spare = path.join(mnt, 'spare');
  await fs.mkdir(spare);
  for (let i = 0; ; i++) {
    try {
      await fs.writeFile(path.join(spare, String(i)), '');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
      throw err;
    }
  }
  const before = await corpusFingerprint(corpus);
  const refused = await append(client, record({ kind: 'no-inode' }));
  assert.equal(refused.code, 'disk_full', refused.text);
  await assertNothingWritten(corpus, before);

  await fs.rm(spare, { recursive: true });
  assert.equal((await append(client, record({ kind: 'after' }))).id, 'relay-0002');
});
