/**
 * Credentials at the HTTP edge (spec §9, §10): unsigned writes are refused
 * 401 `unsigned` on REST; a credential that is present but wrong is a 401
 * whose code names the reason, with WWW-Authenticate, before anything runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { record } from '../support/helpers.js';
import { sign, startTestHub } from '../support/http-helpers.js';

const BODY = record({ kind: 'note' }, 'signed');

async function post(url: string, authorization: string | undefined, body = BODY): Promise<{ status: number; code: string; message: string; wwwAuthenticate: string | null }> {
  const response = await fetch(`${url}/relays`, { method: 'POST', headers: authorization === undefined ? {} : { Authorization: authorization }, body });
  const text = await response.text();
  const parsed = response.status >= 400 ? (JSON.parse(text) as { error: string; message: string }) : { error: '', message: text };
  return { status: response.status, code: parsed.error, message: parsed.message, wwwAuthenticate: response.headers.get('www-authenticate') };
}

test('a signed REST append is stored as deposited-by http/<agent>', async (t) => {
  const h = await startTestHub(t);
  const answer = await post(h.url, sign('scout-7', await h.key('scout-7'), 'POST', BODY));
  assert.equal(answer.status, 201);
  assert.match((await h.store.read('relay-0001')).toString(), /^provenance: as-received\ndeposited-by: http\/scout-7\n/);
});

test('an unsigned REST append is 401 unsigned with WWW-Authenticate: PE-HMAC', async (t) => {
  const h = await startTestHub(t);
  const answer = await post(h.url, undefined);
  assert.deepEqual([answer.status, answer.code], [401, 'unsigned']);
  assert.match(answer.wwwAuthenticate ?? '', /^PE-HMAC /);
  assert.match(answer.message, /Authorization: PE-HMAC/);
  assert.equal(h.store.size, 0);
});

const WRONG: [string, (key: Buffer) => string][] = [
  ['unknown_agent', (key) => sign('nobody', key, 'POST', BODY)],
  ['bad_signature', (key) => sign('scout-7', key, 'POST', BODY + 'tampered')],
  ['bad_signature', (key) => sign('scout-7', key, 'GET', BODY)],
  ['bad_signature', () => sign('scout-7', Buffer.from('not the key'), 'POST', BODY)],
  ['stale_timestamp', (key) => sign('scout-7', key, 'POST', BODY, Date.now() - 120_000)],
  ['stale_timestamp', (key) => sign('scout-7', key, 'POST', BODY, Date.now() + 120_000)],
  ['malformed_authorization', () => 'Bearer abc'],
  ['malformed_authorization', () => 'PE-HMAC agent=scout-7, ts=1700000000'],
  ['malformed_authorization', (key) => sign('scout-7', key, 'POST', BODY).toUpperCase().replace('PE-HMAC AGENT=SCOUT-7, TS=', 'PE-HMAC agent=scout-7, ts=').replace(', SIG=', ', sig=')],
  ['malformed_authorization', () => 'PE-HMAC agent=../etc, ts=1700000000, sig=' + '0'.repeat(64)],
  ['malformed_authorization', () => 'PE-HMAC agent=a, agent=b, ts=1700000000, sig=' + '0'.repeat(64)],
];

for (const [code, make] of WRONG) {
  test(`a wrong credential is 401 ${code} and stores nothing: ${make(Buffer.from('k')).slice(0, 40)}…`, async (t) => {
    const h = await startTestHub(t);
    const answer = await post(h.url, make(await h.key('scout-7')));
    assert.deepEqual([answer.status, answer.code], [401, code]);
    assert.equal(answer.wwwAuthenticate, `PE-HMAC realm="p-e-relay", error="${code}"`);
    assert.equal(h.store.size, 0);
  });
}

test('the skew window is 60 s either way', async (t) => {
  const h = await startTestHub(t);
  const key = await h.key('scout-7');
  const at = (offsetMs: number, n: number) => post(h.url, sign('scout-7', key, 'POST', record({}, `skew ${n}`), Date.now() + offsetMs), record({}, `skew ${n}`));
  assert.equal((await at(-55_000, 1)).status, 201);
  assert.equal((await at(55_000, 2)).status, 201);
  assert.equal((await at(-65_000, 3)).code, 'stale_timestamp');
  assert.equal((await at(65_000, 4)).code, 'stale_timestamp');
});

test('a signature is accepted once: the same request again is 401 replayed_signature', async (t) => {
  const h = await startTestHub(t);
  const authorization = sign('scout-7', await h.key('scout-7'), 'POST', BODY);
  assert.equal((await post(h.url, authorization)).status, 201);
  const again = await post(h.url, authorization);
  assert.deepEqual([again.status, again.code], [401, 'replayed_signature']);
  assert.equal(h.store.size, 1);
});

test('a forged signature does not spend the real one', async (t) => {
  const h = await startTestHub(t);
  const key = await h.key('scout-7');
  const real = sign('scout-7', key, 'POST', BODY);
  const forged = real.replace(/sig=([0-9a-f])/, (_m, c: string) => `sig=${c === '0' ? '1' : '0'}`);
  assert.equal((await post(h.url, forged)).code, 'bad_signature');
  assert.equal((await post(h.url, real)).status, 201);
});

test('a wrong credential on a read is refused too: present means checked', async (t) => {
  const h = await startTestHub(t);
  const response = await fetch(`${h.url}/relays`, { headers: { Authorization: 'PE-HMAC agent=scout-7, ts=1, sig=' + 'a'.repeat(64) } });
  assert.equal(response.status, 401);
  assert.equal(((await response.json()) as { error: string }).error, 'stale_timestamp');
});

test('a body with a Content-Encoding is refused 415 encoded_body', async (t) => {
  const h = await startTestHub(t);
  const response = await fetch(`${h.url}/relays`, { method: 'POST', headers: { 'Content-Encoding': 'gzip', Authorization: sign('scout-7', await h.key('scout-7'), 'POST', BODY) }, body: BODY });
  assert.equal(response.status, 415);
  assert.equal(((await response.json()) as { error: string }).error, 'encoded_body');
});
