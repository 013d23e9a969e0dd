/**
 * The replica's forwarding appender in process: a real hub on loopback as
 * the primary, and a "mirror" that is an ordinary read-only store nobody
 * fills, so what the appender does when its record never arrives (and when
 * it already has) is seen without rsync's timing.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { parseHubUrl } from '../../lib/bridge/hub-url.js';
import { primaryAppender } from '../../lib/replica/primary-appender.js';
import { openStore } from '../../lib/store/store.js';
import { record, tempStore } from '../support/helpers.js';
import { startTestHub } from '../support/http-helpers.js';

const WARN = (warnings: string[]) => ({ debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error: (m: string) => void warnings.push(m) });

/** A primary with a key for alice, an empty read-only store as the replica's mirror, alice's key copied beside it. */
async function setUp(t: TestContext) {
  const primary = await startTestHub(t, { agents: ['alice'] });
  const { dir, corpus } = await tempStore(t);
  const mirror = await openStore({ corpus, readOnly: true, watch: 'none' });
  t.after(() => mirror.close());
  const keys = path.join(dir, 'replica-keys');
  await mkdir(keys, { mode: 0o700 });
  await copyFile(path.join(primary.keys, 'alice.key'), path.join(keys, 'alice.key'));
  return { primary, mirror, keys, dir };
}

test('a forwarded append whose record never reaches the mirror is answered with the primary\'s answer once the bound passes, and says so in the log', async (t) => {
  const { primary, mirror, keys } = await setUp(t);
  const warnings: string[] = [];
  const replica = primaryAppender({ primary: parseHubUrl(primary.url)!, keys, store: mirror, log: WARN(warnings), arrivalWaitMs: 200 });
  t.after(() => replica.close());
  const answer = await replica.append(Buffer.from(record({ from: 'alice' })), { depositedBy: 'mcp', agent: 'alice' });
  assert.equal(answer.id, 'relay-0001');
  assert.equal(answer.depositedBy, 'mcp/alice');
  assert.equal((await primary.store.exists('relay-0001')).state, 'PRESENT');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /relay-0001 .*has not reached this mirror/);
});

test('a forwarded append the primary refuses is the primary\'s own refusal, code and details', async (t) => {
  const { primary, mirror, keys } = await setUp(t);
  const replica = primaryAppender({ primary: parseHubUrl(primary.url)!, keys, store: mirror, log: WARN([]), arrivalWaitMs: 200 });
  t.after(() => replica.close());
  await assert.rejects(replica.append(Buffer.from(record({ from: 'bob' })), { depositedBy: 'mcp', agent: 'alice' }), (err: { code?: string }) => err.code === 'from_mismatch');
  await assert.rejects(replica.append(Buffer.from(record()), { id: 'relay-0042', depositedBy: 'mcp', agent: 'alice' }), (err: { code?: string; details?: { nextFree?: string } }) => err.code === 'id_ahead' && err.details?.nextFree === 'relay-0001');
  assert.equal(primary.store.size, 0);
});

test('a key file the replica cannot use refuses key_unusable naming the file, and sends nothing', async (t) => {
  const { primary, mirror, dir } = await setUp(t);
  const empty = path.join(dir, 'empty-keys');
  await mkdir(empty, { mode: 0o700 });
  await writeFile(path.join(empty, 'alice.key'), '', { mode: 0o600 });
  const replica = primaryAppender({ primary: parseHubUrl(primary.url)!, keys: empty, store: mirror, log: WARN([]) });
  t.after(() => replica.close());
  await assert.rejects(replica.append(Buffer.from(record()), { depositedBy: 'mcp', agent: 'alice' }), (err: { code?: string; message: string }) => err.code === 'key_unusable' && err.message.includes(path.join(empty, 'alice.key')));
  assert.equal(primary.store.size, 0);
});

test('an unkeyed answer forwarded twice lands once: the replica keys it as the hub keys a signed agent\'s answer', async (t) => {
  const { primary, mirror, keys } = await setUp(t);
  const replica = primaryAppender({ primary: parseHubUrl(primary.url)!, keys, store: mirror, log: WARN([]), arrivalWaitMs: 50 });
  t.after(() => replica.close());
  const question = await primary.store.append(Buffer.from(record({ kind: 'question', from: 'bob', to: 'alice' })), { depositedBy: 'cli/test' });
  const answer = Buffer.from(record({ kind: 'answer', from: 'alice', to: 'bob', parent: question.id }, '42'));
  const first = await replica.append(answer, { depositedBy: 'mcp', agent: 'alice' });
  const again = await replica.append(answer, { depositedBy: 'mcp', agent: 'alice' });
  assert.deepEqual([again.id, again.replayed], [first.id, true]);
  assert.match((await primary.store.read(first.id)).toString('utf8'), new RegExp(`\\nidempotency-key: alice/answer/${question.id}\\n`));
  assert.equal(primary.store.size, 2);
});

test('bytes that are not UTF-8 are refused bad_record as the store refuses them, and nothing is sent in their place', async (t) => {
  const { primary, mirror, keys } = await setUp(t);
  const replica = primaryAppender({ primary: parseHubUrl(primary.url)!, keys, store: mirror, log: WARN([]), arrivalWaitMs: 200 });
  t.after(() => replica.close());
  const bytes = Buffer.concat([Buffer.from(record({ from: 'alice' })), Buffer.from([0xff, 0xfe])]);
  await assert.rejects(replica.append(bytes, { depositedBy: 'mcp', agent: 'alice' }), (err: { code?: string }) => err.code === 'bad_record');
  assert.equal(primary.store.size, 0);
});

test('a forwarded record addressed to a name the primary does not know is answered with its id and the primary\'s unknownRecipients, not refused after it was stored', async (t) => {
  const { primary, mirror, keys } = await setUp(t);
  const replica = primaryAppender({ primary: parseHubUrl(primary.url)!, keys, store: mirror, log: WARN([]), arrivalWaitMs: 200 });
  t.after(() => replica.close());
  // The primary lists its tools to the replica unsigned (an unnamed caller's contract) but answers the signed append by
  // the named one: the SDK client must not hold that answer to the unnamed schema.
  const answer = await replica.append(Buffer.from(record({ kind: 'question', from: 'alice', to: 'bob' }, 'which route?')), { depositedBy: 'mcp', agent: 'alice' });
  assert.equal(answer.id, 'relay-0001');
  assert.deepEqual(answer.unknownRecipients, ['bob']);
  assert.equal(primary.store.size, 1, 'stored once');
});
