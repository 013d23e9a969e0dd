/**
 * The hub as a process (`serve --http` from the built CLI), several hubs on
 * one corpus, and the key commands an operator uses beside it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { BIN, ROOT, record, runCli } from '../support/helpers.js';
import { hubStore, sign, type HubStore } from '../support/http-helpers.js';
import { spawnHub, type HubProcess } from '../support/hub-process.js';
import { readKey } from '../../lib/auth/keys.js';

/** `p-e-relay serve --http --port 0`, once the banner names the corpus; stopped before the store goes. */
async function startHub(store: HubStore, extra: string[] = []): Promise<HubProcess> {
  const hub = await spawnHub({ corpus: store.corpus, keys: store.keys, args: extra, env: { P_E_RELAY_LOG: 'info' }, until: 'scanned' });
  store.stopFirst(() => hub.stop());
  return hub;
}

test('the banner suggests keys add the way the hub was run: ./bin/p-e-relay in the checkout, its path elsewhere, never npx', async (t) => {
  const store = await hubStore(t);
  // From the store's directory its keys are the default ./keys: no --keys in the suggestion.
  for (const [cwd, command, keysFlag] of [[ROOT, './bin/p-e-relay', ` --keys ${store.keys}`], [path.dirname(store.keys), BIN, '']] as const) {
    const hub = await spawnHub({ corpus: store.corpus, keys: store.keys, cwd, env: { P_E_RELAY_LOG: 'info' }, until: 'scanned' });
    store.stopFirst(() => hub.stop());
    assert.ok(hub.stderr().includes(`add one with \`${command} keys add AGENT${keysFlag}\``), hub.stderr());
    assert.doesNotMatch(hub.stderr(), /npx/);
  }
});

test('a signature used on one hub process is refused on another sharing the corpus', async (t) => {
  const store = await hubStore(t);
  const { keys } = store;
  assert.equal((await runCli(['keys', 'add', 'scout-7', '--keys', keys])).code, 0);
  const [a, b] = await Promise.all([startHub(store), startHub(store)]);
  const body = record({ from: 'scout-7' });
  const authorization = sign('scout-7', (await readKey(keys, 'scout-7'))!, 'POST', body);
  const first = await fetch(`${a.url}/relays`, { method: 'POST', headers: { Authorization: authorization }, body });
  assert.equal(first.status, 201);
  const replay = await fetch(`${b.url}/relays`, { method: 'POST', headers: { Authorization: authorization }, body });
  assert.equal(replay.status, 401);
  assert.equal(((await replay.json()) as { error: string }).error, 'replayed_signature');
});

test('serve --http prints its URL, the corpus and its record count, and how to add a first key', async (t) => {
  const store = await hubStore(t);
  const { corpus, keys } = store;
  await runCli(['append', '--corpus', corpus], { input: record() });
  const hub = await startHub(store);
  assert.match(hub.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(hub.stderr(), new RegExp(`corpus: ${corpus.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(1 record\\)`));
  assert.match(hub.stderr(), /keys: none yet .*p-e-relay keys add AGENT/);
  // A key added while it runs is usable at once, no restart.
  assert.equal((await runCli(['keys', 'add', 'late', '--keys', keys])).code, 0);
  const body = record({}, 'late');
  const response = await fetch(`${hub.url}/relays`, { method: 'POST', headers: { Authorization: sign('late', (await readKey(keys, 'late'))!, 'POST', body) }, body });
  assert.equal(response.status, 201);
});

test('keys add writes a 0600 key file and prints its path, never the key', async (t) => {
  const { keys } = await hubStore(t);
  const added = await runCli(['keys', 'add', 'scout-7', '--keys', keys]);
  assert.equal(added.code, 0);
  const file = path.join(keys, 'scout-7.key');
  assert.equal(added.stdout, `${file}\n`);
  const key = (await readKey(keys, 'scout-7'))!.toString();
  assert.match(key, /^[0-9a-f]{64}$/);
  assert.ok(!added.stdout.includes(key) && !added.stderr.includes(key), 'the key is never printed');
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  const twice = await runCli(['keys', 'add', 'scout-7', '--keys', keys]);
  assert.equal(twice.code, 1);
  assert.equal((await readKey(keys, 'scout-7'))!.toString(), key, 'an existing key is never overwritten');
});

test('keys list names each agent with a key; revoke removes one; bad names are refused', async (t) => {
  const { keys } = await hubStore(t);
  await runCli(['keys', 'add', 'b-agent', '--keys', keys]);
  await runCli(['keys', 'add', 'a.agent', '--keys', keys]);
  const listed = await runCli(['keys', 'list', '--keys', keys]);
  assert.deepEqual(listed.stdout.trim().split('\n').map((l) => l.split('\t')[0]), ['a.agent', 'b-agent']);
  assert.equal((await runCli(['keys', 'revoke', 'a.agent', '--keys', keys])).code, 0);
  assert.equal((await runCli(['keys', 'list', '--keys', keys])).stdout.split('\t')[0], 'b-agent');
  assert.equal((await runCli(['keys', 'revoke', 'a.agent', '--keys', keys])).code, 1);
  assert.equal((await runCli(['keys', 'add', '../evil', '--keys', keys])).code, 1);
  assert.equal((await runCli(['keys', 'frobnicate', '--keys', keys])).code, 2);
});

test('sign prints an Authorization header the hub accepts for that body', async (t) => {
  const store = await hubStore(t);
  const { keys } = store;
  await runCli(['keys', 'add', 'scout-7', '--keys', keys]);
  const hub = await startHub(store);
  const body = record({ kind: 'signed-by-cli' });
  const signed = await runCli(['sign', '--agent', 'scout-7', '--keys', keys], { input: body });
  assert.equal(signed.code, 0);
  const m = /^Authorization: (PE-HMAC agent=scout-7, ts=\d+, sig=[0-9a-f]{64})\n$/.exec(signed.stdout);
  assert.ok(m, signed.stdout);
  const response = await fetch(`${hub.url}/relays`, { method: 'POST', headers: { Authorization: m[1]! }, body });
  assert.equal(response.status, 201);
  const unknown = await runCli(['sign', '--agent', 'nobody', '--keys', keys], { input: body });
  assert.equal(unknown.code, 1);
});

/** Resolves with the exit code once the child exits by itself; kills it and fails after `boundMs`. */
function exitOf(child: ChildProcess, boundMs: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running ${boundMs} ms later`));
    }, boundMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

test('serve --http on a busy port says so and exits 1 by itself within 2 s', async (t) => {
  const store = await hubStore(t);
  const first = await startHub(store);
  const port = new URL(first.url).port;
  const second = spawn(process.execPath, [BIN, 'serve', '--http', '--port', port, '--corpus', store.corpus, '--keys', store.keys], { stdio: ['ignore', 'ignore', 'pipe'] });
  store.stopFirst(() => second.kill('SIGKILL'));
  let stderr = '';
  const said = new Promise<void>((resolve) =>
    second.stderr!.on('data', (d) => {
      stderr += d;
      if (/already in use/.test(stderr)) resolve();
    }),
  );
  const exited = new Promise<number | null>((resolve) => second.once('exit', resolve));
  await Promise.race([said, exited]);
  assert.match(stderr, new RegExp(`Port ${port} on 127\\.0\\.0\\.1 is already in use`));
  assert.equal(await Promise.race([exited, exitOf(second, 2000)]), 1, stderr);
});

test('serve --http stops by itself on SIGTERM with a stream open, exit 0', async (t) => {
  const store = await hubStore(t);
  assert.equal((await runCli(['keys', 'add', 'watcher', '--keys', store.keys])).code, 0);
  const hub = await startHub(store);
  const stream = await fetch(`${hub.url}/events`, { headers: { Authorization: sign('watcher', (await readKey(store.keys, 'watcher'))!, 'GET') } });
  assert.equal(stream.status, 200);
  const reading = stream.body!.getReader();
  await reading.read(); // the stream's opening comment: it is being served
  const exit = exitOf(hub.child, 10_000);
  hub.child.kill('SIGTERM');
  assert.equal(await exit, 0, hub.stderr());
  await reading.cancel().catch(() => {});
});

test('keys add on a running hub is logged as an added key, never as a revocation', async (t) => {
  const store = await hubStore(t);
  const hub = await startHub(store);
  const seen = (pattern: RegExp) =>
    new Promise<void>((resolve) => {
      const check = () => pattern.test(hub.stderr()) && (hub.child.stderr!.off('data', check), resolve());
      hub.child.stderr!.on('data', check);
      check();
    });
  assert.equal((await runCli(['keys', 'add', 'late', '--keys', store.keys])).code, 0);
  await seen(/key added for agent late/);
  // A second key, once logged, is a barrier: anything the first file's creation set off was logged before it.
  assert.equal((await runCli(['keys', 'add', 'later', '--keys', store.keys])).code, 0);
  await seen(/key added for agent later/);
  assert.doesNotMatch(hub.stderr(), /revoked or replaced/);
});
