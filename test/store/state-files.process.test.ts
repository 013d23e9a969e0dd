/**
 * Files under `.state/` that are not what a store wrote there: a FIFO, a
 * symlink to /dev/zero. Each is read the one way (lib/disk/state-file.ts):
 * never blocked on, never followed, never read past a small cap; treated as
 * absent or false, and replaced. Real stdio servers of the bundle, real FIFOs
 * and symlinks; every call has a deadline, since the failure is a hang.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { guardMemory } from '../../lib/auth/guard-memory.js';
import { digestOf } from '../../lib/model/deposit.js';
import { idempotencyScope } from '../../lib/model/idempotency-keys.js';
import { sign, startTestHub } from '../support/http-helpers.js';
import { record, stdioClient, tempStore, textOf } from '../support/helpers.js';

const DEADLINE_MS = 15_000;

function within<T>(what: string, promise: Promise<T>): Promise<T> {
  let timer!: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer in ${DEADLINE_MS} ms (hung)`)), DEADLINE_MS)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const plants = [
  ['a FIFO', (file: string) => void execFileSync('mkfifo', [file])],
  ['a symlink to /dev/zero', (file: string) => symlink('/dev/zero', file)],
] as const;

/** The done mark's and generation-0 claim's names of an unnamed stdio server's key (idempotency-claims.ts). */
function keyFiles(corpus: string, key: string): { done: string; claim: string } {
  const h = createHash('sha256').update(idempotencyScope('mcp', key, undefined, '')).digest('hex');
  const dir = path.join(corpus, '.state', 'idempotency');
  return { done: path.join(dir, `${h}.done`), claim: path.join(dir, `${h}.0`) };
}

function appended(result: unknown): { id: string; replayed?: true } {
  const r = result as CallToolResult;
  assert.ok(!r.isError, textOf(r));
  return r.structuredContent as { id: string; replayed?: true };
}

for (const [what, plant] of plants) {
  test(`a key's done mark that is ${what}: four keyed appends at once store one record, another append goes on, the mark is replaced`, async (t) => {
    const { corpus } = await tempStore(t);
    const { done } = keyFiles(corpus, 'k-odd');
    await mkdir(path.dirname(done), { recursive: true });
    await plant(done);
    const { client } = await stdioClient(t, corpus);
    const args = { bytes: record({ kind: 'note', from: 'ana' }, 'once'), idempotency_key: 'k-odd' };
    const answers = await within('four keyed appends', Promise.all([1, 2, 3, 4].map(() => client.callTool({ name: 'append_relay', arguments: args })))).then((all) => all.map(appended));
    assert.equal(new Set(answers.map((a) => a.id)).size, 1, 'one record for the key');
    assert.equal(answers.filter((a) => a.replayed !== true).length, 1, 'one call stored it, three were answered it');
    const other = appended(await within('another append', client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'bob' }, 'unkeyed') } })));
    assert.notEqual(other.id, answers[0]!.id);
    assert.ok((await lstat(done)).isFile(), 'the odd mark was replaced by a regular one');
    assert.equal((await readFile(done, 'utf8')).trim(), answers[0]!.id);
    const again = appended(await within('the key once more', client.callTool({ name: 'append_relay', arguments: args })));
    assert.deepEqual([again.id, again.replayed], [answers[0]!.id, true], 'the key is still usable');
  });

  test(`a key's claim file that is ${what} is no live claim: the keyed append stores at once`, async (t) => {
    const { corpus } = await tempStore(t);
    const { claim } = keyFiles(corpus, 'k-claim');
    await mkdir(path.dirname(claim), { recursive: true });
    await plant(claim);
    const { client } = await stdioClient(t, corpus);
    const args = { bytes: record({ kind: 'note', from: 'ana' }, 'claimed'), idempotency_key: 'k-claim' };
    const first = appended(await within('a keyed append', client.callTool({ name: 'append_relay', arguments: args })));
    const again = appended(await within('its repeat', client.callTool({ name: 'append_relay', arguments: args })));
    assert.deepEqual([again.id, again.replayed], [first.id, true]);
  });

  for (const name of ['issued', 'index', 'index.build']) {
    test(`.state/${name} that is ${what}: a server opens, appends and lists without hanging`, async (t) => {
      const { corpus } = await tempStore(t);
      await mkdir(path.join(corpus, '.state'), { recursive: true });
      await plant(path.join(corpus, '.state', name));
      const { client } = await stdioClient(t, corpus);
      const a = appended(await within('an append', client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'ana' }, 'one') } })));
      const b = appended(await within('a second append', client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'ana' }, 'two') } })));
      assert.deepEqual([a.id, b.id], ['relay-0001', 'relay-0002']);
      const listed = await within('a listing', client.callTool({ name: 'list_relays', arguments: {} }));
      assert.match(textOf(listed), /relay-0002/);
      if (name === 'issued') {
        assert.ok((await lstat(path.join(corpus, '.state', name))).isFile(), 'the log was replaced by a regular file');
        assert.match(await readFile(path.join(corpus, '.state', name), 'latin1'), /relay-0002/);
      }
    });
  }

  test(`.state/mirror that is ${what} still marks a mirror: appends are refused read_only at once`, async (t) => {
    const { corpus } = await tempStore(t);
    await mkdir(path.join(corpus, '.state'), { recursive: true });
    await plant(path.join(corpus, '.state', 'mirror'));
    const { client } = await stdioClient(t, corpus);
    const refused = (await within('an append', client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note' }, 'x') } }))) as CallToolResult;
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /read.only|mirror/i);
    assert.deepEqual((await readdir(corpus)).filter((n) => n.startsWith('relay-')), []);
  });
}

test('over a real hub: a FIFO as a REST key\'s done mark: four keyed appends at once, another agent\'s append and GET /agents all answer', async (t) => {
  const h = await startTestHub(t, { agents: ['scout-7', 'ana'] });
  const [scout, ana] = [await h.key('scout-7'), await h.key('ana')];
  const body = record({ kind: 'note', from: 'scout-7' }, 'keyed over REST');
  // A REST key's scope is bound to the bytes (idempotency-keys.ts): its done mark's name says so.
  const h64 = createHash('sha256').update(idempotencyScope('http/scout-7', 'rest-fifo', undefined, digestOf(Buffer.from(body)))).digest('hex');
  const done = path.join(h.corpus, '.state', 'idempotency', `${h64}.done`);
  await mkdir(path.dirname(done), { recursive: true });
  execFileSync('mkfifo', [done]);
  let second = 0;
  const post = (agent: string, key: Buffer, text: string, headers: Record<string, string> = {}) =>
    fetch(`${h.url}/relays`, { method: 'POST', headers: { Authorization: sign(agent, key, 'POST', text, Date.now() + 1000 * second++), Accept: 'application/json', ...headers }, body: text });
  const answers = await within('four keyed REST appends', Promise.all([1, 2, 3, 4].map(() => post('scout-7', scout, body, { 'Idempotency-Key': 'rest-fifo' }))));
  assert.deepEqual(answers.map((r) => r.status).sort(), [200, 200, 200, 201]);
  const ids = await Promise.all(answers.map(async (r) => ((await r.json()) as { id: string }).id));
  assert.equal(new Set(ids).size, 1);
  assert.equal((await within("ana's append", post('ana', ana, record({ kind: 'note', from: 'ana' }, 'unkeyed')))).status, 201);
  assert.equal((await within('GET /agents', fetch(`${h.url}/agents`))).status, 200);
  assert.equal((await readFile(done, 'utf8')).trim(), ids[0]);
});

for (const [what, plant] of plants) {
  test(`the signature guard's .since that is ${what} is read as none: memory from the start, at once`, async (t) => {
    const { corpus } = await tempStore(t);
    const dir = path.join(corpus, '.state', 'replay');
    await mkdir(dir, { recursive: true });
    await plant(path.join(dir, '.since'));
    const memory = await within('the guard\'s memory', guardMemory(dir, Math.floor(Date.now() / 1000), async () => true));
    assert.equal(memory.since, 0);
  });
}
