/**
 * Exactly once (spec §8b) at the store: a repeat answers the first record, a
 * conflict names it, a restart reads keys back from the deposit headers, and
 * concurrent calls store one record. The multi-process races run over real
 * stdio servers in test/store/append/idempotency.process.test.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { RelayError } from '../../../lib/errors.js';
import { idempotencyScope } from '../../../lib/model/idempotency-keys.js';
import { silentLogger } from '../../../lib/log.js';
import { verifyCorpus } from '../../../lib/ops/verify.js';
import { hostIdentity } from '../../../lib/disk/host.js';
import { openStore, type RelayStore } from '../../../lib/store/store.js';
import { killed, record, tempStore } from '../../support/helpers.js';

const MCP = 'mcp';

async function refused(promise: Promise<unknown>, code: string): Promise<RelayError> {
  let caught: unknown;
  await assert.rejects(promise, (err) => ((caught = err), true));
  assert.ok(caught instanceof RelayError, String(caught));
  assert.equal(caught.code, code, caught.message);
  return caught;
}

async function recordFiles(corpus: string): Promise<string[]> {
  return (await readdir(corpus)).filter((name) => /^relay-\d{4}$/.test(name)).sort();
}

async function open(t: import('node:test').TestContext, corpus: string, options: { claimStaleMs?: number } = {}): Promise<RelayStore> {
  const store = await openStore({ corpus, watch: 'none', ...options });
  t.after(() => store.close());
  return store;
}

const bytes = (body: string) => Buffer.from(record({ kind: 'note', from: 'scout-7' }, body));

test('a repeat with the same key and bytes answers the first record with replayed: true, and stores nothing', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const first = await store.append(bytes('once'), { depositedBy: MCP, idempotencyKey: 'k1' });
  assert.equal(first.replayed, undefined);
  const again = await store.append(bytes('once'), { depositedBy: MCP, idempotencyKey: 'k1' });
  assert.deepEqual(again, { ...first, replayed: true });
  assert.deepEqual(await recordFiles(corpus), [first.id]);
});

test('the key is written into the deposit header after digest:', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const { id, digest } = await store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: 'key with spaces ~!' });
  const head = (await readFile(path.join(corpus, id), 'utf8')).split('\n---\n')[0]!;
  assert.match(head, new RegExp(`\\ndigest: ${digest}\\nidempotency-key: key with spaces ~!$`));
});

test('a repeat with the same key and different bytes is refused idempotency_conflict, naming the earlier id', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const first = await store.append(bytes('one'), { depositedBy: MCP, idempotencyKey: 'k1' });
  const err = await refused(store.append(bytes('two'), { depositedBy: MCP, idempotencyKey: 'k1' }), 'idempotency_conflict');
  assert.equal(err.details.id, first.id);
  assert.match(err.message, new RegExp(first.id));
  assert.deepEqual(await recordFiles(corpus), [first.id]);
});

test('the conflict\'s sentence says what landed: under a question\'s key, the question (await its answers, do not ask again); under a note\'s, how to go on', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const ask = (body: string) => Buffer.from(record({ kind: 'question', from: 'planner', to: 'scout-7' }, body));
  const q = await store.append(ask('Which route?'), { depositedBy: MCP, idempotencyKey: 'q-1' });
  const asked = await refused(store.append(ask('Which route is open?'), { depositedBy: MCP, idempotencyKey: 'q-1' }), 'idempotency_conflict');
  assert.match(asked.message, new RegExp(`A question from planner already landed under this key as ${q.id}: if that was you asking this same question, do not ask again; its answers will name ${q.id} in parent:\\. Otherwise \\(another agent's, or another question of yours under a reused key\\) the key is taken`));
  const note = await store.append(bytes('one'), { depositedBy: MCP, idempotencyKey: 'n-1' });
  const noted = await refused(store.append(bytes('two'), { depositedBy: MCP, idempotencyKey: 'n-1' }), 'idempotency_conflict');
  assert.match(noted.message, new RegExp(`Use a fresh key for a new record, or send ${note.id}'s exact bytes again`));
  assert.doesNotMatch(noted.message, /already landed/);
});

test('a repeat that proposes another id than the stored one is a conflict too', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const first = await store.append(bytes('one'), { depositedBy: MCP, idempotencyKey: 'k1' });
  assert.deepEqual(await store.append(bytes('one'), { depositedBy: MCP, idempotencyKey: 'k1', id: first.id }), { ...first, replayed: true });
  await refused(store.append(bytes('one'), { depositedBy: MCP, idempotencyKey: 'k1', id: 'relay-0002' }), 'idempotency_conflict');
});

test('the scope is the channel: the same key on another channel is another record', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const a = await store.append(bytes('same'), { depositedBy: 'mcp/scout-7', idempotencyKey: 'k1' });
  const b = await store.append(bytes('same'), { depositedBy: 'http/scout-7', idempotencyKey: 'k1' });
  assert.notEqual(a.id, b.id);
  assert.equal(b.replayed, undefined);
});

test('after a restart the key is read back from the deposit header (no .state/ needed)', async (t) => {
  const { corpus } = await tempStore(t);
  const before = await openStore({ corpus, watch: 'none' });
  const first = await before.append(bytes('durable'), { depositedBy: MCP, idempotencyKey: 'k-restart' });
  await before.close();
  // A clone carries the records but not .state/: only the header can answer.
  const { rm } = await import('node:fs/promises');
  await rm(path.join(corpus, '.state'), { recursive: true, force: true });
  const after = await open(t, corpus);
  assert.deepEqual(await after.append(bytes('durable'), { depositedBy: MCP, idempotencyKey: 'k-restart' }), { ...first, replayed: true });
  await refused(after.append(bytes('other'), { depositedBy: MCP, idempotencyKey: 'k-restart' }), 'idempotency_conflict');
  assert.deepEqual(await recordFiles(corpus), [first.id]);
});

test('twenty concurrent calls with one key in one process store one record', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const answers = await Promise.all(Array.from({ length: 20 }, () => store.append(bytes('raced'), { depositedBy: MCP, idempotencyKey: 'k-race' })));
  const ids = new Set(answers.map((a) => a.id));
  assert.equal(ids.size, 1);
  assert.equal(answers.filter((a) => !a.replayed).length, 1);
  assert.equal((await recordFiles(corpus)).length, 1);
});

test('two store instances on one corpus (two writers, each with its own index) store one record per key', async (t) => {
  const { corpus } = await tempStore(t);
  const a = await open(t, corpus);
  const b = await open(t, corpus); // watch: none: neither hears the other's appends
  for (let round = 0; round < 50; round++) {
    const key = `k-${round}`;
    const [x, y] = await Promise.all([a.append(bytes(`r${round}`), { depositedBy: MCP, idempotencyKey: key }), b.append(bytes(`r${round}`), { depositedBy: MCP, idempotencyKey: key })]);
    assert.equal(x.id, y.id, `round ${round}`);
    assert.equal([x, y].filter((r) => r.replayed).length, 1, `round ${round}`);
  }
  assert.equal((await recordFiles(corpus)).length, 50);
});

for (const [what, key] of [['empty', ''], ['201 characters', 'k'.repeat(201)], ['not ASCII', 'clé'], ['a control character', 'a\nb']] as const) {
  test(`a key that is ${what} is refused bad_idempotency_key and nothing is stored`, async (t) => {
    const { corpus } = await tempStore(t);
    const store = await open(t, corpus);
    await refused(store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: key }), 'bad_idempotency_key');
    assert.deepEqual(await recordFiles(corpus), []);
  });
}

test('a key of exactly 200 printable characters is accepted', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const key = ' !~'.repeat(66) + 'ab';
  assert.equal(key.length, 200);
  const first = await store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: key });
  assert.equal((await store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: key })).id, first.id);
});

test('a REST key (deposited-by http/<signer>) is bound to its bytes: a record stored under it with other bytes does not make the signer\'s own 409, across a restart', async (t) => {
  const { corpus } = await tempStore(t);
  const rest = { depositedBy: 'http/ana', agent: 'ana', idempotencyKey: 'ana/q/2' };
  const answer = (body: string) => Buffer.from(record({ kind: 'note', from: 'ana' }, body));
  let store = await open(t, corpus);
  // A proxy rewrote the header of ana's first request to the key her next one will carry.
  const rewritten = await store.append(answer('my first record'), rest);
  const own = await store.append(answer('my second record'), rest);
  assert.notEqual(own.id, rewritten.id);
  assert.equal(own.replayed, undefined);
  await store.close();
  store = await open(t, corpus);
  assert.deepEqual([(await store.append(answer('my second record'), rest)).id, (await store.append(answer('my first record'), rest)).id], [own.id, rewritten.id], 'each key answers its own bytes after a restart');
  // Over /mcp and stdio the key is in the signed body: other bytes under it are still a conflict.
  await store.append(answer('over mcp'), { ...rest, depositedBy: 'mcp/ana' });
  await refused(store.append(answer('over mcp, other words'), { ...rest, depositedBy: 'mcp/ana' }), 'idempotency_conflict');
  assert.equal((await recordFiles(corpus)).length, 3);
});

/** The claim file a writer leaves under .state/idempotency/ (what idempotency-claims.ts writes). */
async function leaveClaim(corpus: string, depositedBy: string, key: string, owner: { host: string; boot: string; pid: number }, gen = 0): Promise<string> {
  const dir = path.join(corpus, '.state', 'idempotency');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${createHash('sha256').update(idempotencyScope(depositedBy, key, undefined, '')).digest('hex')}.${gen}`);
  await writeFile(file, JSON.stringify({ ...owner, nonce: 'x' }) + '\n');
  return file;
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await killed(child);
  return child.pid!;
}

test('a done mark naming a record that does not carry the key is dropped: the real sender\'s record is stored, not refused', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const other = await store.append(bytes('someone else'), { depositedBy: MCP });
  // Planted under .state/: the key's done mark points at a record stored without any key.
  const doneMark = (await leaveClaim(corpus, MCP, 'k-planted', { ...hostIdentity(), pid: process.pid })).replace(/\.0$/, '.done');
  await writeFile(doneMark, `${other.id}\n`);
  await unlink(doneMark.replace(/\.done$/, '.0'));
  const stored = await store.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-planted' });
  assert.notEqual(stored.id, other.id);
  assert.equal(stored.replayed, undefined);
  assert.equal((await readFile(doneMark, 'utf8')).trim(), stored.id, 'the mark now names the record that carries the key');
  assert.deepEqual(await store.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-planted' }), { ...stored, replayed: true });
});

test('a done mark rewritten to name another record makes a store that has not heard the key\'s record read the corpus, not store it twice', async (t) => {
  const { corpus } = await tempStore(t);
  const a = await open(t, corpus);
  const b = await open(t, corpus);
  await b.open();
  const other = await a.append(bytes('unkeyed'), { depositedBy: MCP });
  const first = await a.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-rewritten' });
  // b has heard of neither, and the issued log will not tell it of the keyed one: as if its line were never written.
  const issued = path.join(corpus, '.state', 'issued');
  await writeFile(issued, (await readFile(issued, 'latin1')).split('\n')[0] + '\n');
  const doneMark = (await leaveClaim(corpus, MCP, 'k-rewritten', { ...hostIdentity(), pid: process.pid })).replace(/\.0$/, '.done');
  await unlink(doneMark.replace(/\.done$/, '.0'));
  await writeFile(doneMark, `${other.id}\n`);
  assert.deepEqual(await b.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-rewritten' }), { ...first, replayed: true });
  assert.deepEqual(await recordFiles(corpus), [other.id, first.id]);
  assert.equal((await readFile(doneMark, 'utf8')).trim(), first.id, 'the false mark is replaced by the true one');
});

test('a done mark that names no id at all is a false one too: passed over, the corpus read, the mark replaced', async (t) => {
  const { corpus } = await tempStore(t);
  const a = await open(t, corpus);
  const b = await open(t, corpus);
  await b.open();
  const first = await a.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-garbled' });
  const issued = path.join(corpus, '.state', 'issued');
  await writeFile(issued, '');
  const doneMark = (await leaveClaim(corpus, MCP, 'k-garbled', { ...hostIdentity(), pid: process.pid })).replace(/\.0$/, '.done');
  await unlink(doneMark.replace(/\.done$/, '.0'));
  await writeFile(doneMark, 'relay-12x\n');
  assert.deepEqual(await b.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-garbled' }), { ...first, replayed: true });
  assert.deepEqual(await recordFiles(corpus), [first.id]);
  assert.equal((await readFile(doneMark, 'utf8')).trim(), first.id);
});

test('a true done mark is believed while this store\'s issued log has not caught up with its record', async (t) => {
  const { corpus } = await tempStore(t);
  const a = await open(t, corpus);
  const warnings: string[] = [];
  const b = await openStore({ corpus, watch: 'none', log: { ...silentLogger, warn: (line) => void warnings.push(line) } });
  t.after(() => b.close());
  await a.append(bytes('unkeyed'), { depositedBy: MCP });
  const first = await a.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-lagging' });
  const issued = path.join(corpus, '.state', 'issued');
  await writeFile(issued, (await readFile(issued, 'latin1')).split('\n')[0] + '\n');
  assert.deepEqual(await b.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-lagging' }), { ...first, replayed: true });
  assert.deepEqual(warnings, []);
});

test('a done mark naming an id this corpus never issued is dropped: the key stores, rather than asking for a re-deposit under that id', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const doneMark = (await leaveClaim(corpus, MCP, 'k-nowhere', { ...hostIdentity(), pid: process.pid })).replace(/\.0$/, '.done');
  await unlink(doneMark.replace(/\.done$/, '.0'));
  await writeFile(doneMark, 'relay-0999\n');
  const stored = await store.append(bytes('mine'), { depositedBy: MCP, idempotencyKey: 'k-nowhere' });
  assert.equal(stored.id, 'relay-0001');
  assert.equal(stored.replayed, undefined);
});

test('a claim left by a writer on this host that died is taken over at once', async (t) => {
  const { corpus } = await tempStore(t);
  await leaveClaim(corpus, MCP, 'k-dead', { ...hostIdentity(), pid: await deadPid() });
  const store = await open(t, corpus);
  const stored = await store.append(bytes('after a crash'), { depositedBy: MCP, idempotencyKey: 'k-dead' });
  assert.equal(stored.replayed, undefined);
  assert.equal((await recordFiles(corpus)).length, 1);
});

test('a writer that died after publishing its record but before marking the key done: the retry answers that record', async (t) => {
  const { corpus } = await tempStore(t);
  const first = await (async () => {
    const s = await openStore({ corpus, watch: 'none' });
    try {
      return await s.append(bytes('published'), { depositedBy: MCP, idempotencyKey: 'k-half' });
    } finally {
      await s.close();
    }
  })();
  // Undo what the writer did after link(): its done mark. Leave its claim, as if it died there.
  const dir = path.join(corpus, '.state', 'idempotency');
  const { rm } = await import('node:fs/promises');
  for (const name of await readdir(dir)) await rm(path.join(dir, name));
  await leaveClaim(corpus, MCP, 'k-half', { ...hostIdentity(), pid: await deadPid() });
  // A store that opened before the record landed and never heard of it (no watcher).
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  assert.deepEqual(await store.append(bytes('published'), { depositedBy: MCP, idempotencyKey: 'k-half' }), { ...first, replayed: true });
  assert.equal((await recordFiles(corpus)).length, 1);
});

test("another host's claim whose time stands still is presumed dead after claimStaleMs, judged by this process's clock", async (t) => {
  const { corpus } = await tempStore(t);
  const file = await leaveClaim(corpus, MCP, 'k-far', { host: 'some-other-host', boot: '00000000', pid: 1 });
  const future = new Date(Date.now() + 3600_000); // a skewed clock on the other host must not matter
  await utimes(file, future, future);
  const store = await open(t, corpus, { claimStaleMs: 150 });
  const started = Date.now();
  const stored = await store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: 'k-far' });
  assert.ok(Date.now() - started >= 150, 'waited for the claim to stand still');
  assert.equal(stored.replayed, undefined);
});

test('a refused append (bad proposal) lets go of the key: the next call with it may store', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  await refused(store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: 'k-ahead', id: 'relay-0009' }), 'id_ahead');
  const stored = await store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: 'k-ahead' });
  assert.equal(stored.id, 'relay-0001');
  assert.equal(stored.replayed, undefined);
});

// Judged by its time alone it would be live for a minute: the test's timeout is what fails.
test('a claim from an earlier boot of this host is dead at once, whatever its pid', { timeout: 20_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  await leaveClaim(corpus, MCP, 'k-boot', { host: hostIdentity().host, boot: 'e4r1ierb', pid: process.pid });
  const store = await open(t, corpus, { claimStaleMs: 60_000 });
  const stored = await store.append(bytes('after a reboot'), { depositedBy: MCP, idempotencyKey: 'k-boot' });
  assert.equal(stored.replayed, undefined);
});

test('verify accepts a record with the idempotency-key line', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  await store.append(bytes('x'), { depositedBy: MCP, idempotencyKey: 'k-verify' });
  const report = await verifyCorpus(corpus);
  assert.equal(report.checked, 1);
  assert.deepEqual(report.damaged, []);
});

test('a lost record re-deposited under its own id and its original key is put back, and the key then answers it', async (t) => {
  const { corpus } = await tempStore(t);
  const first = await openStore({ corpus, watch: 'none' });
  const lost = await first.append(bytes('the question'), { depositedBy: MCP, idempotencyKey: 'k-lost' });
  await first.append(Buffer.from(record({ parent: lost.id }, 'cites it')), { depositedBy: MCP });
  await first.close();
  await unlink(path.join(corpus, lost.id));
  const store = await open(t, corpus);
  assert.equal((await store.exists(lost.id)).state, 'KNOWN_MISSING');
  const restored = await store.append(bytes('the question'), { depositedBy: MCP, idempotencyKey: 'k-lost', id: lost.id });
  assert.deepEqual([restored.id, restored.digest, restored.replayed], [lost.id, lost.digest, undefined]);
  const again = await store.append(bytes('the question'), { depositedBy: MCP, idempotencyKey: 'k-lost', id: lost.id });
  assert.deepEqual([again.id, again.replayed], [lost.id, true]);
  assert.deepEqual(await recordFiles(corpus), ['relay-0001', 'relay-0002']);
});

test('a lost record re-deposited under its original key while this store still holds it is put back without waiting for a listing', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus); // watch: none, as a store woken by bells watches no directory
  const lost = await store.append(bytes('the question'), { depositedBy: MCP, idempotencyKey: 'k-held' });
  await unlink(path.join(corpus, lost.id));
  const restored = await store.append(bytes('the question'), { depositedBy: MCP, idempotencyKey: 'k-held', id: lost.id });
  assert.deepEqual([restored.id, restored.replayed], [lost.id, undefined]);
  assert.match((await store.read(lost.id)).toString(), /the question/);
});

test('a key whose record is gone, sent without its id, is refused not_found with the id to re-deposit under, and stores nothing', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await open(t, corpus);
  const lost = await store.append(bytes('the question'), { depositedBy: MCP, idempotencyKey: 'k-gone' });
  await unlink(path.join(corpus, lost.id));
  const err = await refused(store.append(bytes('the question'), { depositedBy: MCP, idempotencyKey: 'k-gone' }), 'not_found');
  assert.equal(err.details.id, lost.id);
  assert.match(err.message, new RegExp(`send this same call with id: ${lost.id}`));
  assert.deepEqual(await recordFiles(corpus), []);
});

test('a REST answer\'s own key holds across a restart and a snapshot: reworded, it is refused idempotency_conflict, and verify agrees', async (t) => {
  const { corpus } = await tempStore(t);
  const rest = { depositedBy: 'http/scout-7' };
  const first = await open(t, corpus);
  const question = await first.append(Buffer.from(record({ kind: 'question', from: 'ana', to: 'scout-7' }, 'which route?')), { depositedBy: 'http/ana' });
  const answer = await first.append(Buffer.from(record({ kind: 'answer', from: 'scout-7', parent: question.id }, 'north')), { ...rest, idempotencyKey: `scout-7/answer/${question.id}` });
  await first.close();
  const again = await open(t, corpus); // the key read back from the record's own header
  const err = await refused(again.append(Buffer.from(record({ kind: 'answer', from: 'scout-7', parent: question.id }, 'north, I think')), { ...rest, idempotencyKey: `scout-7/answer/${question.id}` }), 'idempotency_conflict');
  assert.equal(err.details.id, answer.id);
  assert.deepEqual(await recordFiles(corpus), [question.id, answer.id]);
  await again.close();
  const report = await verifyCorpus(corpus);
  assert.deepEqual(report.state.index?.disagree ?? [], [], 'the snapshot\'s key scope is the record\'s own');
});
