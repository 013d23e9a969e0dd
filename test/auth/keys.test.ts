/** Key files: the one reader, `keys add` written whole, and the refusals of the key commands. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { addKey, loadKey, readKeyFile, revokeKey } from '../../lib/auth/keys.js';
import { bridgeKey } from '../../lib/bridge/bridge-key.js';
import { computeSignature } from '../../lib/auth/sign.js';
import { verifyCredential } from '../../lib/auth/verify.js';
import { ERROR_STATUS } from '../../lib/errors.js';
import { tempDir } from '../support/helpers.js';

test('keys add leaves exactly the key file, 0600, holding a 64-hex key, and no temp file', async (t) => {
  const keys = path.join(await tempDir(t), 'keys');
  const file = await addKey(keys, 'scout-7');
  assert.deepEqual(await readdir(keys), ['scout-7.key']);
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  const found = await readKeyFile(file);
  assert.equal(found.kind, 'key');
  assert.match(found.kind === 'key' ? found.key.toString() : '', /^[0-9a-f]{64}$/);
});

test('keys add for an agent that has a key is refused key_exists, and the key is kept', async (t) => {
  const keys = path.join(await tempDir(t), 'keys');
  const file = await addKey(keys, 'scout-7');
  const before = await readKeyFile(file);
  await assert.rejects(addKey(keys, 'scout-7'), { code: 'key_exists' });
  assert.deepEqual(await readKeyFile(file), before);
  assert.deepEqual(await readdir(keys), ['scout-7.key'], 'no temp file left behind');
});

test('a name that cannot be an agent is refused bad_agent_name; revoking a missing key is unknown_agent', async (t) => {
  const keys = path.join(await tempDir(t), 'keys');
  await assert.rejects(addKey(keys, '../evil'), { code: 'bad_agent_name' });
  await assert.rejects(revokeKey(keys, '.hidden'), { code: 'bad_agent_name' });
  await assert.rejects(revokeKey(keys, 'nobody'), { code: 'unknown_agent' });
});

test('keys add all is refused broadcast_agent (every answer to it would be a broadcast), and nothing is written', async (t) => {
  const keys = path.join(await tempDir(t), 'keys');
  await mkdir(keys);
  await assert.rejects(addKey(keys, 'all'), { code: 'broadcast_agent' });
  assert.deepEqual(await readdir(keys), []);
});

test('a signature as all is refused broadcast_agent, even where a key file for all is there, and is not spent', async (t) => {
  const keys = path.join(await tempDir(t), 'keys');
  await mkdir(keys);
  await writeFile(path.join(keys, 'all.key'), 'secret\n', { mode: 0o600 });
  const ts = String(Math.floor(Date.now() / 1000));
  const body = Buffer.from('@p-e/x0\n\nhi');
  let spent = 0;
  const verifier = { keys: { keyOf: async (agent: string) => { const found = await loadKey(keys, agent); return found !== null && 'key' in found ? found.key : null; } }, guard: { accept: async () => (spent++, true) } };
  const credential = { agent: 'all', ts, sig: computeSignature(Buffer.from('secret'), 'POST', ts, body) };
  await assert.rejects(verifyCredential(credential, 'POST', body, verifier as never), { code: 'broadcast_agent' });
  assert.equal(spent, 0);
  assert.equal(ERROR_STATUS.broadcast_agent, 401, 'a credential that is wrong is a 401 (spec §9)');
});

test('the key-file reader says what a file holds: a key and its mode, nothing, or what is wrong', async (t) => {
  const dir = await tempDir(t);
  const at = (name: string) => path.join(dir, name);
  await writeFile(at('good.key'), '  abc \n', { mode: 0o600 });
  await writeFile(at('loose.key'), 'abc\n');
  await chmod(at('loose.key'), 0o644);
  await writeFile(at('empty.key'), ' \n', { mode: 0o600 });
  await writeFile(at('binary.key'), Buffer.from([0xff, 0xfe]), { mode: 0o600 });
  await mkdir(at('folder.key'));
  execFileSync('mkfifo', [at('fifo.key')]); // must not hang the reader
  assert.deepEqual(await readKeyFile(at('good.key')), { kind: 'key', key: Buffer.from('abc'), mode: 0o600 });
  assert.deepEqual(await readKeyFile(at('loose.key')), { kind: 'key', key: Buffer.from('abc'), mode: 0o644 });
  assert.deepEqual(await readKeyFile(at('none.key')), { kind: 'missing' });
  const causes = await Promise.all(['empty', 'binary', 'folder', 'fifo'].map(async (name) => {
    const found = await readKeyFile(at(`${name}.key`));
    return found.kind === 'unusable' ? found.cause : found.kind;
  }));
  assert.deepEqual(causes, ['empty', 'not-utf8', 'EISDIR', 'not-regular']);
});

test('the hub refuses a loose key the bridge still signs with; both read it through the one reader', async (t) => {
  const keys = await tempDir(t);
  await writeFile(path.join(keys, 'loose.key'), 'abc\n');
  await chmod(path.join(keys, 'loose.key'), 0o644);
  const hub = await loadKey(keys, 'loose');
  assert.ok(hub !== null && 'problem' in hub && /other users can read/.test(hub.problem), JSON.stringify(hub));
  assert.deepEqual(await bridgeKey(keys, 'loose').load(), Buffer.from('abc'));
  await writeFile(path.join(keys, 'empty.key'), '', { mode: 0o600 });
  await assert.rejects(bridgeKey(keys, 'empty').load(), (err: { code?: string; details?: { cause?: string } }) => err.code === 'key_unusable' && err.details?.cause === 'empty');
  assert.deepEqual(await loadKey(keys, 'empty'), { problem: 'it is empty' });
});
