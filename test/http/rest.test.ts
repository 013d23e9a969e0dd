/**
 * REST (spec §9): the same store functions and sentences as the tools, with
 * HTTP statuses; and the curl + openssl recipe of docs/http.md, run verbatim.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { RelayStore } from '../../lib/store/store.js';
import { ROUTES } from '../../lib/http/routes.js';
import { startHub } from '../../lib/http/server.js';
import { WEB_CSP } from '../../lib/http/web-view.js';
import { BIN, ROOT, record } from '../support/helpers.js';
import { said } from '../support/poll.js';
import { hubStore, sign, startTestHub, type TestHub } from '../support/http-helpers.js';
import { refusedHttp } from '../support/refusal.js';

const run = promisify(execFile);

async function seed(h: TestHub): Promise<void> {
  await h.store.append(Buffer.from(record({ kind: 'task' }, 'one')), { depositedBy: 'cli/test' });
  await h.store.append(Buffer.from(record({ kind: 'reply', from: 'b', parent: 'relay-0001', ref: 'relay-0009' }, 'two')), { depositedBy: 'cli/test' });
}

async function errorOf(response: Response): Promise<string> {
  return ((await response.json()) as { error: string }).error;
}

test('the curl + openssl recipe in docs/http.md works as written', async (t) => {
  const h = await startTestHub(t);
  const doc = await readFile(path.join(ROOT, 'docs', 'http.md'), 'utf8');
  const from = doc.indexOf('<!-- tested:');
  const section = doc.slice(from, doc.indexOf('\n### ', from));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 3, 'the REST recipe, the MCP recipe and the reads');
  const cwd = path.dirname(h.keys); // holds keys/scout-7.key, as the doc says
  const { stdout } = await run('bash', ['-c', `set -euo pipefail\n${blocks.join('\n')}`], { cwd, env: { ...process.env, HUB: h.url } });
  assert.match(stdout, /^stored relay-0001 \(sha256:[0-9a-f]{64}, deposited-by http\/scout-7, /m);
  assert.match(stdout, /"depositedBy":"mcp\/scout-7"/);
  assert.match(stdout, /^present \(2\): relay-0001 relay-0002$/m);
  assert.match(stdout, /^p-e-relay-state: UNKNOWN/im);
  assert.match((await h.store.read('relay-0001')).toString(), /hello from curl\n$/);
});

test('followed in order, the CLI recipe in docs/http.md stores a record of its own, not the curl note again, and opens the stream', { timeout: 60_000 }, async (t) => {
  const h = await startTestHub(t);
  const doc = await readFile(path.join(ROOT, 'docs', 'http.md'), 'utf8');
  const from = doc.indexOf('<!-- tested:');
  const curl = [...doc.slice(from, doc.indexOf('\n### ', from)).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const cliAt = doc.indexOf('<!-- tested:', from + 1);
  const cli = /```sh\n([\s\S]*?)```/.exec(doc.slice(cliAt, doc.indexOf('\n### ', cliAt)))?.[1];
  assert.ok(cliAt > from && cli !== undefined, 'the CLI block is marked as tested');
  // The doc runs from the checkout; here ./bin/p-e-relay is the checkout's launcher, run from the directory holding keys/.
  const script = ['set -euo pipefail', ...curl, cli.replaceAll('./bin/p-e-relay', `"${BIN}"`)].join('\n');
  const child = spawn('bash', ['-c', script], { cwd: path.dirname(h.keys), env: { ...process.env, HUB: h.url }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const gone = new Promise((resolve) => child.once('close', resolve));
  t.after(async () => {
    try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
    await gone;
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  await said(child.stdout!, () => out, /^: p-e-relay events$/m, 'the event stream of the last line to open', 30_000);
  assert.match(out, /^stored relay-0003 \(sha256:[0-9a-f]{64}, deposited-by http\/scout-7, /m);
  const bodies = await Promise.all(['relay-0001', 'relay-0002', 'relay-0003'].map(async (id) => (await h.store.read(id)).toString().split('\n---\n')[1]));
  assert.equal(new Set(bodies).size, 3, `three different records: ${JSON.stringify(bodies)}`);
  assert.match(bodies[2]!, /hello from the CLI\n$/);
});

test('GET /relays lists as two text lines, or JSON when asked, after a mark', async (t) => {
  const h = await startTestHub(t);
  await seed(h);
  assert.equal(await (await fetch(`${h.url}/relays`)).text(), 'present (2): relay-0001 relay-0002\nknown missing (1): relay-0009\n');
  const json = await fetch(`${h.url}/relays?after=relay-0001`, { headers: { Accept: 'application/json' } });
  assert.deepEqual(await json.json(), { after: 'relay-0001', present: ['relay-0002'], knownMissing: ['relay-0009'] });
  const bad = await fetch(`${h.url}/relays?after=relay-1`);
  assert.deepEqual([bad.status, await errorOf(bad)], [400, 'bad_id']);
});

test('GET /relays/ID answers the exact file bytes; a missing id is 404 naming its state', async (t) => {
  const h = await startTestHub(t);
  await seed(h);
  const held = await fetch(`${h.url}/relays/relay-0002`);
  assert.equal(held.status, 200);
  assert.equal(held.headers.get('p-e-relay-state'), 'PRESENT');
  assert.deepEqual(Buffer.from(await held.arrayBuffer()), await readFile(path.join(h.corpus, 'relay-0002')));
  for (const [id, state] of [['relay-0009', 'KNOWN_MISSING'], ['relay-0003', 'UNKNOWN'], ['relay-33', 'UNKNOWN'], ['..%2Fkeys', 'UNKNOWN']] as const) {
    const missing = await fetch(`${h.url}/relays/${id}`);
    assert.equal(missing.status, 404, id);
    assert.equal(missing.headers.get('p-e-relay-state'), state, id);
    const body = (await missing.json()) as { error: string; state: string; message: string };
    assert.deepEqual([body.error, body.state], ['not_found', state]);
    assert.match(body.message, new RegExp(state));
  }
});

test('HEAD /relays/ID gives the state in P-E-Relay-State and no body', async (t) => {
  const h = await startTestHub(t);
  await seed(h);
  for (const [id, status, state] of [['relay-0001', 200, 'PRESENT'], ['relay-0009', 404, 'KNOWN_MISSING'], ['relay-0005', 404, 'UNKNOWN']] as const) {
    const response = await fetch(`${h.url}/relays/${id}`, { method: 'HEAD' });
    assert.deepEqual([response.status, response.headers.get('p-e-relay-state'), await response.text()], [status, state, '']);
  }
});

test('GET /relays/ID/replies lists one level, as text or JSON', async (t) => {
  const h = await startTestHub(t);
  await seed(h);
  assert.equal(await (await fetch(`${h.url}/relays/relay-0001/replies`)).text(), 'replies to relay-0001 (1):\nrelay-0002 (kind reply, from b, parent relay-0001, refs relay-0009) deposited-by cli/test\n');
  const json = await fetch(`${h.url}/relays/relay-0009/replies`, { headers: { Accept: 'application/json' } });
  const { replies } = (await json.json()) as { replies: { depositedAt: string }[] };
  assert.match(replies[0]!.depositedAt, /^\d{4}-\d\d-\d\dT/);
  assert.deepEqual(replies, [{ id: 'relay-0002', kind: 'reply', from: 'b', to: null, parent: 'relay-0001', refs: ['relay-0009'], depositedBy: 'cli/test', provenance: 'as-received', depositedAt: replies[0]!.depositedAt }]);
});

test('POST /relays answers 201 with the id, and the store\'s refusals with their statuses', async (t) => {
  const h = await startTestHub(t, { limits: { appendBurst: 100 } });
  const key = await h.key('scout-7');
  const post = (body: string, query = '', accept = 'application/json', atMs = Date.now()) =>
    fetch(`${h.url}/relays${query}`, { method: 'POST', headers: { Accept: accept, Authorization: sign('scout-7', key, 'POST', body, atMs) }, body });
  const firstAt = Date.now();
  const created = await post(record({}, 'a'), '', 'application/json', firstAt);
  assert.equal(created.status, 201);
  assert.equal(created.headers.get('location'), '/relays/relay-0001');
  assert.equal(((await created.json()) as { id: string }).id, 'relay-0001');

  // A retry of the same bytes: signed afresh, a second before the first call's
  // second (the same body signed in the same second would be a replay, and
  // "now minus a second" is that second again once the clock has ticked).
  const again = await post(record({}, 'a'), '?id=relay-0001', 'application/json', firstAt - 1000);
  assert.equal(again.status, 409);
  assert.deepEqual(await again.json().then((b) => [(b as { error: string }).error, (b as { identical: boolean }).identical]), ['id_held', true]);
  const ahead = await post(record({}, 'b'), '?id=relay-0050');
  assert.deepEqual([ahead.status, await errorOf(ahead)], [409, 'id_ahead']);
  const bad = await post('no first line');
  assert.deepEqual([bad.status, await errorOf(bad)], [400, 'bad_record']);
  const text = await post(record({}, 'c'), '', 'text/plain');
  assert.match(await text.text(), /^stored relay-0002 /);
});

test('a read-only hub refuses appends 403 naming the primary', async (t) => {
  const { corpus, keys, stopFirst } = await hubStore(t);
  const { addKey } = await import('../../lib/auth/keys.js');
  await addKey(keys, 'scout-7');
  const store = await RelayStore.prepare({ corpus, readOnly: true, primary: 'http://primary.example:7077' });
  const hub = await startHub({ store, keys, port: 0 });
  stopFirst(async () => {
    await hub.close();
    await store.close();
  });
  const { readKey } = await import('../../lib/auth/keys.js');
  const body = record();
  const response = await fetch(`${hub.url}/relays`, { method: 'POST', headers: { Authorization: sign('scout-7', (await readKey(keys, 'scout-7'))!, 'POST', body) }, body });
  assert.equal(response.status, 403);
  const refusal = (await response.json()) as { error: string; message: string };
  assert.equal(refusal.error, 'read_only');
  assert.match(refusal.message, /primary\.example/);
});

test('/healthz and /metrics report the store and what was answered', async (t) => {
  const h = await startTestHub(t);
  await seed(h);
  await fetch(`${h.url}/relays/relay-0404`);
  const body = record({}, 'metered');
  await fetch(`${h.url}/relays`, { method: 'POST', headers: { Authorization: sign('scout-7', await h.key('scout-7'), 'POST', body) }, body });
  assert.deepEqual(await (await fetch(`${h.url}/healthz`)).json(), { status: 'ok', version: (await import('../../lib/version.js')).VERSION, ready: true, records: 3, readOnly: false });
  const metrics = await fetch(`${h.url}/metrics`);
  assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await metrics.text();
  for (const line of ['p_e_relay_records 3', 'p_e_relay_appends_total{door="http"} 1', 'p_e_relay_refusals_total{code="not_found"} 1', 'p_e_relay_active_waits 0', 'p_e_relay_active_streams 0', 'p_e_relay_ids_lost_total 0']) {
    assert.ok(text.split('\n').includes(line), `metrics has "${line}"`);
  }
  assert.match(text, /^# TYPE p_e_relay_appends_total counter$/m);
});

test('a method a route does not answer is 405 with Allow; an unknown path is 404 no_route', async (t) => {
  const h = await startTestHub(t);
  const put = await fetch(`${h.url}/relays/relay-0001`, { method: 'PUT', body: 'x' });
  assert.deepEqual([put.status, put.headers.get('allow'), await errorOf(put)], [405, 'GET, HEAD', 'method_not_allowed']);
  const events = await fetch(`${h.url}/events`, { method: 'POST', body: 'x' });
  assert.deepEqual([events.status, events.headers.get('allow')], [405, 'GET']);
  const nowhere = await fetch(`${h.url}/nowhere`);
  assert.deepEqual([nowhere.status, await errorOf(nowhere)], [404, 'no_route']);
});

test('no_route names every route of the table', async (t) => {
  const h = await startTestHub(t);
  const { message } = (await (await fetch(`${h.url}/nowhere`)).json()) as { message: string };
  for (const route of Object.values(ROUTES)) assert.ok(message.includes(route.shown), `${route.shown} in: ${message}`);
});

test('the web view\'s refusals are counted like every other and keep its security headers', async (t) => {
  const h = await startTestHub(t);
  const missing = await fetch(`${h.url}/assets/nothing.js`);
  assert.equal(missing.headers.get('content-security-policy'), WEB_CSP);
  await refusedHttp(missing, 'not_found');
  const post = await fetch(`${h.url}/`, { method: 'POST', body: 'x' });
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  await refusedHttp(post, 'method_not_allowed');
  const text = await (await fetch(`${h.url}/metrics`)).text();
  assert.match(text, /^p_e_relay_refusals_total\{code="not_found"\} 1$/m);
  assert.match(text, /^p_e_relay_refusals_total\{code="method_not_allowed"\} 1$/m);
});
