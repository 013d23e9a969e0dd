/**
 * How `serve --http` stops on SIGTERM (lib/http/shutdown.ts): by itself
 * once its steps are done, even when keys/ went just before, the signal
 * came as soon as it said it serves, or a stream's reader had stopped; a
 * request that will not finish is cut after a short grace and logged; a
 * handle nothing closes is cut at the deadline and named; a second signal
 * exits at once. Each hub is the built CLI as a child process on a temp
 * store.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { SHUTDOWN_DEADLINE_MS } from '../../lib/http/shutdown.js';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import { killed, record } from '../support/helpers.js';
import { hubStore, sign, type HubStore } from '../support/http-helpers.js';
import { spawnHub, type HubProcess } from '../support/hub-process.js';

/** An fs.watch nobody closes, preloaded into the hub. */
const FORGOTTEN_WATCH = fileURLToPath(new URL('../fixtures/forgotten-watch.mjs', import.meta.url));

/** A hub on the store, killed outright after the test if it is still running (a hung one must not hold the suite). */
async function startHub(store: HubStore, env: Record<string, string> = {}): Promise<HubProcess> {
  const hub = await spawnHub({ corpus: store.corpus, keys: store.keys, env: { P_E_RELAY_LOG: 'info', ...env }, until: 'scanned' });
  store.stopFirst(() => {
    if (hub.child.exitCode === null && hub.child.signalCode === null) hub.child.kill('SIGKILL');
    return killed(hub.child);
  });
  return hub;
}

/** The exit code, or a rejection when the process is still running boundMs later. */
function exitOf(child: ChildProcess, boundMs: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still running ${boundMs} ms later`)), boundMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/** Resolves once the hub's stderr matches; rejects if it exits first. */
function said(hub: HubProcess, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    const exited = () => reject(new Error(`the hub exited before saying ${pattern}:\n${hub.stderr()}`));
    const look = () => {
      if (!pattern.test(hub.stderr())) return;
      hub.child.stderr!.off('data', look);
      hub.child.off('exit', exited);
      resolve();
    };
    hub.child.stderr!.on('data', look);
    hub.child.once('exit', exited);
    look();
  });
}

test('serve --http exits by itself, exit 0, on a SIGTERM that comes as its keys directory is removed', async (t) => {
  const store = await hubStore(t);
  for (const agent of ['scout-7', 'scout-8']) await addKey(store.keys, agent); // more than one file goes with keys/
  const hub = await startHub(store);
  // Stopped while keys/ goes and the signal is sent, the hub takes both in one turn of its loop once
  // continued, the removal's events first (libuv runs signal handlers after the other I/O of a poll):
  // its key watcher is closed while the removed files' checks are under way. chokidar 5 then started
  // watching again, on the nearest directory left, and the hub never exited.
  hub.child.kill('SIGSTOP');
  await rm(store.keys, { recursive: true });
  hub.child.kill('SIGTERM');
  hub.child.kill('SIGCONT');
  assert.equal(await exitOf(hub.child, SHUTDOWN_DEADLINE_MS + 5_000), 0, hub.stderr());
  assert.doesNotMatch(hub.stderr(), /exiting now/); // not cut at the deadline: nothing was left open
});

test('serve --http signalled the moment it says it serves, before its start-up scan is done, shuts down in order, exit 0', async (t) => {
  const store = await hubStore(t);
  const hub = await spawnHub({ corpus: store.corpus, keys: store.keys, env: { P_E_RELAY_LOG: 'info' }, until: 'listening' });
  store.stopFirst(() => hub.stop());
  hub.child.kill('SIGTERM');
  assert.equal(await exitOf(hub.child, SHUTDOWN_DEADLINE_MS + 5_000), 0, hub.stderr());
  assert.match(hub.stderr(), /shutting down \(SIGTERM\)/);
});

test('serve --http exits 0 at once on SIGTERM with an event stream whose reader stopped in the middle of its catch-up', { timeout: 60_000 }, async (t) => {
  const store = await hubStore(t);
  await addKey(store.keys, 'reader');
  // ~7 MB of events (a wide kind: header each), more than a stalled loopback socket takes (~4 MB),
  // so the hub's catch-up is held back waiting for the socket to drain when the signal comes.
  const wide = 'k'.repeat(12_000);
  for (let i = 1; i <= 600; i++) {
    const bytes = Buffer.from(record({ kind: wide }, `record ${i}`));
    const deposit = { provenance: 'as-received' as const, depositedBy: 'test', depositedAt: new Date(0).toISOString(), digest: digestOf(bytes) };
    await writeFile(path.join(store.corpus, `relay-${String(i).padStart(4, '0')}`), buildRecordFile(deposit, bytes));
  }
  const hub = await startHub(store);
  // A raw socket, so that a paused reader takes nothing more (node's client keeps reading into its buffers).
  const socket = net.connect(hub.port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.on('error', () => {});
  socket.write(`GET /events?after=relay-0000 HTTP/1.1\r\nHost: 127.0.0.1:${hub.port}\r\nAuthorization: ${sign('reader', (await readKey(store.keys, 'reader'))!, 'GET')}\r\n\r\n`);
  let text = '';
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (!text.includes('\nid: relay-0001\n')) return;
      socket.off('data', onData).pause(); // the catch-up has begun; the reader stops
      resolve();
    };
    socket.on('data', onData);
  });
  const exit = exitOf(hub.child, SHUTDOWN_DEADLINE_MS - 1_000);
  hub.child.kill('SIGTERM');
  assert.equal(await exit, 0, hub.stderr());
});

test('serve --http on SIGTERM cuts a connection that does not finish after a short grace, says so, and exits 0', async (t) => {
  const store = await hubStore(t);
  const hub = await startHub(store);
  // A request whose body never comes: the hub answers 100 Continue, so it is being served, then waits.
  const socket = net.connect(hub.port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.on('error', () => {});
  socket.write(`POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${hub.port}\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`);
  await new Promise<void>((resolve) => socket.once('data', (chunk) => (assert.match(chunk.toString(), /^HTTP\/1\.1 100 Continue/), resolve())));
  const exit = exitOf(hub.child, SHUTDOWN_DEADLINE_MS - 1_000);
  hub.child.kill('SIGTERM');
  assert.equal(await exit, 0, hub.stderr());
  assert.match(hub.stderr(), /shutting down: closed 1 connection whose request was still being sent or answered 250 ms into the shutdown/);
});

test('serve --http holding a handle nothing closes exits 1 at its shutdown deadline, naming what it still held', { timeout: 30_000 }, async (t) => {
  const store = await hubStore(t);
  const hub = await startHub(store, { NODE_OPTIONS: `--import ${FORGOTTEN_WATCH}` });
  const exit = exitOf(hub.child, SHUTDOWN_DEADLINE_MS + 5_000);
  hub.child.kill('SIGTERM');
  assert.equal(await exit, 1, hub.stderr());
  assert.match(hub.stderr(), new RegExp(`the shutdown took longer than ${SHUTDOWN_DEADLINE_MS} ms; exiting now \\(still open: [^)]*FSEventWrap ×1`));
});

test('serve --http exits 1 at once on a second SIGTERM while its shutdown is held up', async (t) => {
  const store = await hubStore(t);
  const hub = await startHub(store, { NODE_OPTIONS: `--import ${FORGOTTEN_WATCH}` });
  hub.child.kill('SIGTERM');
  await said(hub, /shutting down \(SIGTERM\)/);
  const exit = exitOf(hub.child, SHUTDOWN_DEADLINE_MS - 1_000); // well before the deadline would end it
  hub.child.kill('SIGTERM');
  assert.equal(await exit, 1, hub.stderr());
  assert.match(hub.stderr(), /SIGTERM again; exiting now/);
});
