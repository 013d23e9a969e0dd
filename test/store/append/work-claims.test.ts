/**
 * Work claims in the store (spec §8e): granted or refused at once, ended by
 * their holder's release or done, lapsing, and counted from the records
 * (one copied in counts too). Real stores on temp corpora, in this process.
 */
import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { diskRecords, type RecordReader } from '../../../lib/disk/record-file.js';
import { buildRecordFile, digestOf } from '../../../lib/model/deposit.js';
import { MAX_LIVE_CLAIMS_PER_AGENT } from '../../../lib/model/work-claims.js';
import { openStore, type AppendOptions, type RelayStore } from '../../../lib/store/store.js';
import { cleanup } from '../../support/cleanup.js';
import { record, tempStore } from '../../support/helpers.js';
import { refused } from '../../support/refusal.js';

const as = (agent: string): AppendOptions => ({ depositedBy: 'mcp', agent });
const claim = (targets: string, headers: Record<string, string> = {}) => Buffer.from(record({ kind: 'claim', claim: targets, ...headers }, 'why'));
const end = (kind: string, parent: string) => Buffer.from(record({ kind, parent }, ''));

async function opened(t: TestContext, corpus?: string): Promise<RelayStore> {
  const store = await openStore({ corpus: corpus ?? (await tempStore(t)).corpus });
  cleanup(t, () => store.close());
  return store;
}

async function recordCount(store: RelayStore): Promise<number> {
  return (await readdir(store.paths.corpus)).filter((n) => n.startsWith('relay-')).length;
}

test('a claim is granted and shows as live, with its holder, targets and lapse', async (t) => {
  const store = await opened(t);
  const got = await store.append(claim('task:t1 path:src/api', { for: '10m' }), as('ana'));
  const live = await store.workClaims();
  assert.equal(live.length, 1);
  assert.deepEqual({ ...live[0], depositedAt: undefined, lapsesAt: undefined }, { id: got.id, holder: 'ana', targets: ['task:t1', 'path:src/api'], depositedAt: undefined, lapsesAt: undefined });
  assert.equal(Date.parse(live[0]!.lapsesAt) - Date.parse(got.depositedAt), 600_000);
});

test('a colliding claim of another agent is refused claimed, naming target, holder, claim and lapse, and stores nothing', async (t) => {
  const store = await opened(t);
  const first = await store.append(claim('path:src/api/**'), as('ana'));
  const before = await recordCount(store);
  const err = await refused(store.append(claim('task:x path:src/api/users.ts'), as('bob')), 'claimed');
  assert.match(err.message, /path:src\/api\/users\.ts/);
  assert.match(err.message, /ana/);
  assert.match(err.message, new RegExp(first.id));
  assert.match(err.message, /lapses 20\d\d-/);
  assert.equal(await recordCount(store), before);
  const [c] = err.details.collisions as { holder: string; claim: string }[];
  assert.deepEqual([c!.holder, c!.claim], ['ana', first.id]);
});

test("an agent's own live claims never collide: claiming again renews", async (t) => {
  const store = await opened(t);
  await store.append(claim('task:t1'), as('ana'));
  await store.append(claim('task:t1 path:src'), as('ana'));
  assert.equal((await store.workClaims()).length, 2);
});

test('a release by the holder ends the claim at once; by anyone else it is refused not_holder', async (t) => {
  const store = await opened(t);
  const c = await store.append(claim('task:t1'), as('ana'));
  await refused(store.append(end('release', c.id), as('bob')), 'not_holder');
  await refused(store.append(claim('task:t1'), as('bob')), 'claimed');
  await store.append(end('release', c.id), as('ana'));
  assert.deepEqual(await store.workClaims(), []);
  await store.append(claim('task:t1'), as('bob'));
});

test('an operator (cli/USER) may release any claim', async (t) => {
  const store = await opened(t);
  const c = await store.append(claim('task:t1'), as('ana'));
  await store.append(end('release', c.id), { depositedBy: 'cli/root' });
  assert.deepEqual(await store.workClaims(), []);
});

test('done closes the tasks for good: a later claim is refused done, naming the closing record', async (t) => {
  const store = await opened(t);
  const c = await store.append(claim('task:t1 path:src/x.ts'), as('ana'));
  const d = await store.append(end('done', c.id), as('ana'));
  const err = await refused(store.append(claim('task:t1'), as('bob')), 'done');
  assert.equal(err.details.closedBy, d.id);
  assert.match(err.message, new RegExp(d.id));
  await store.append(claim('path:src/x.ts'), as('bob')); // paths are not closed by done
});

test('a release or done whose parent is not a claim, or that has none, is refused bad_claim', async (t) => {
  const store = await opened(t);
  const note = await store.append(Buffer.from(record({ kind: 'note' })), as('ana'));
  await refused(store.append(end('release', note.id), as('ana')), 'bad_claim');
  await refused(store.append(end('done', 'relay-0099'), as('ana')), 'bad_claim');
  await refused(store.append(Buffer.from(record({ kind: 'release' })), as('ana')), 'bad_claim');
  assert.equal(await recordCount(store), 1);
});

test('an unnamed caller may not claim, nor release (save an operator): agent_required', async (t) => {
  const store = await opened(t);
  await refused(store.append(claim('task:t1'), { depositedBy: 'mcp' }), 'agent_required');
  const c = await store.append(claim('task:t1'), as('ana'));
  await refused(store.append(end('release', c.id), { depositedBy: 'mcp' }), 'agent_required');
});

test('a bad claim stores nothing', async (t) => {
  const store = await opened(t);
  for (const [targets, life] of [['path:/etc/passwd', undefined], ['task:t1', '0s'], ['task:t1', '99h'], ['task:t1', 'soon'], ['path:**', undefined]] as const) {
    await refused(store.append(claim(targets, life ? { for: life } : {}), as('ana')), 'bad_claim');
  }
  assert.equal(await recordCount(store), 0);
});

test('a lapsed claim is not live and collides with nothing; a done on it still closes its tasks', async (t) => {
  const store = await opened(t);
  // A claim deposited 20 s ago for 10 s, copied in as rsync would.
  const n = 1;
  const at = new Date(Date.now() - 20_000).toISOString();
  const bytes = claim('task:t1', { for: '10s' });
  await writeFile(path.join(store.paths.corpus, 'relay-0001'), buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp', depositedAt: at, digest: digestOf(bytes), agent: 'ana' }, bytes));
  assert.deepEqual(await store.workClaims(), []);
  await store.append(claim('task:t2'), as('bob'));
  await store.append(end('done', `relay-000${n}`), as('ana'));
  await refused(store.append(claim('task:t1'), as('bob')), 'done');
});

test('a claim copied into the corpus (rsync, git) counts as live like any other', async (t) => {
  const store = await opened(t);
  const bytes = claim('path:docs');
  await writeFile(path.join(store.paths.corpus, 'relay-0001'), buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp/carol', depositedAt: new Date().toISOString(), digest: digestOf(bytes) }, bytes));
  const err = await refused(store.append(claim('path:docs/a.md'), as('bob')), 'claimed');
  assert.match(err.message, /carol/);
});

test(`one agent holds at most ${MAX_LIVE_CLAIMS_PER_AGENT} live claims`, async (t) => {
  const store = await opened(t);
  // Written as copies: a thousand appends would be slow for a test of one cap.
  const at = new Date().toISOString();
  for (let i = 1; i <= MAX_LIVE_CLAIMS_PER_AGENT; i++) {
    const bytes = claim(`task:t${i}`);
    await writeFile(path.join(store.paths.corpus, `relay-${String(i).padStart(4, '0')}`), buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp/ana', depositedAt: at, digest: digestOf(bytes) }, bytes));
  }
  assert.equal((await store.workClaims()).length, MAX_LIVE_CLAIMS_PER_AGENT);
  const err = await refused(store.append(claim('task:one-more'), as('ana')), 'bad_claim');
  assert.equal(err.details.limit, MAX_LIVE_CLAIMS_PER_AGENT);
  await store.append(claim('task:one-more'), as('bob'));
});

test('two stores on one corpus racing for one task: exactly one claim is stored', async (t) => {
  const { corpus } = await tempStore(t);
  const stores = await Promise.all([opened(t, corpus), opened(t, corpus), opened(t, corpus)]);
  const results = await Promise.allSettled(stores.flatMap((s, i) => [s.append(claim('task:race'), as(`a${i}`)), s.append(claim('task:race'), as(`b${i}`))]));
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status === 'rejected' && (r.reason as Error).message)));
  for (const r of results) if (r.status === 'rejected') assert.equal((r.reason as { code: string }).code, 'claimed');
});

test('a claim replayed under its key answers the first record while live, and is refused bad_claim once that ended', async (t) => {
  const store = await opened(t);
  const keyed = { ...as('ana'), idempotencyKey: 'sha256/same-bytes' };
  const first = await store.append(claim('task:t1'), keyed);
  const again = await store.append(claim('task:t1'), keyed);
  assert.deepEqual([again.id, again.replayed], [first.id, true]);
  await store.append(end('release', first.id), as('ana'));
  const err = await refused(store.append(claim('task:t1'), keyed), 'bad_claim');
  assert.match(err.message, new RegExp(`${first.id}.*lapsed or ended`));
});

test('a claim copied in with a deposited-at that is no time holds nothing, and every door still answers', async (t) => {
  const store = await opened(t);
  const bytes = claim('task:t1');
  await writeFile(path.join(store.paths.corpus, 'relay-0001'), buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp/carol', depositedAt: 'yesterday', digest: digestOf(bytes) }, bytes));
  assert.deepEqual(await store.workClaims(), []);
  await store.append(claim('task:t1'), as('bob'));
  assert.deepEqual((await store.workClaims()).map((c) => c.holder), ['bob']);
});

test('a claim this process could not read for a moment is read again, never taken for no claim', async (t) => {
  const { corpus } = await tempStore(t);
  const first = await opened(t, corpus);
  const held = await first.append(claim('task:t1'), as('ana'));
  // The second process's first read of ana's claim fails as a busy machine's may (too many open files).
  let failed = false;
  const reader: RecordReader = {
    ...diskRecords,
    read: async (file, max) => {
      if (!failed && path.basename(file) === held.id) {
        failed = true;
        throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
      }
      return diskRecords.read(file, max);
    },
  };
  const second = await openStore({ corpus, reader });
  cleanup(t, () => second.close());
  await assert.rejects(second.append(claim('task:t1'), as('bob')));
  assert.ok(failed);
  await refused(second.append(claim('task:t1'), as('bob')), 'claimed');
  assert.deepEqual((await second.workClaims()).map((c) => c.holder), ['ana']);
});
