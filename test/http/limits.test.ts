/**
 * What keeps the hub standing (spec §9): the body cap counted as bytes
 * arrive, DNS-rebinding checks on loopback, the per-agent append rate, the
 * wait caps, and held sockets that are given back when a client goes away
 * or stalls.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { DEFAULT_BODY_CAP } from '../../lib/http/body.js';
import { errorCode, record, textOf } from '../support/helpers.js';
import { httpClient, rawExchange, sign, startTestHub } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';

const BIG = '@p-e/x0\n\n' + 'x'.repeat(70_000);

test('a body over its cap with an honest Content-Length is 413 too_large: REST\'s is the record cap, /mcp\'s the body cap', async (t) => {
  const h = await startTestHub(t);
  const overBodyCap = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(DEFAULT_BODY_CAP)}"}}`;
  for (const [path, body, cap] of [['/relays', BIG, /record .*\(65536 bytes\)/], ['/mcp', overBodyCap, new RegExp(`body cap \\(${DEFAULT_BODY_CAP} bytes\\)`)]] as const) {
    const response = await fetch(`${h.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body });
    assert.equal(response.status, 413, path);
    const refusal = (await response.json()) as { error: string; message: string };
    assert.equal(refusal.error, 'too_large');
    assert.match(refusal.message, cap);
  }
  assert.equal(h.store.size, 0);
});

test('a chunked body with no length is counted as it streams and refused 413 at the cap', async (t) => {
  const h = await startTestHub(t);
  const head = `POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${h.hub.port}\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const chunk = (text: string) => `${text.length.toString(16)}\r\n${text}\r\n`;
  const chunks = [head, ...Array.from({ length: 20 }, () => chunk('y'.repeat(4096))), '0\r\n\r\n'];
  const answer = await rawExchange(h.hub.port, chunks);
  assert.match(answer, /^HTTP\/1\.1 413 /);
  assert.match(answer, /"error":"too_large"/);
  assert.equal(h.store.size, 0);
});

test('a Content-Length that lies gets no more than it declared into the request', async (t) => {
  const h = await startTestHub(t);
  const body = record({}, 'z'.repeat(70_000));
  // Declares 40 bytes and sends 70 kB: the parser frames the body by the
  // declared length and takes the rest for a malformed next request (400).
  const answer = await rawExchange(h.hub.port, [`POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${h.hub.port}\r\nContent-Length: 40\r\n\r\n`, body]);
  assert.match(answer, /^HTTP\/1\.1 40[01] /);
  assert.doesNotMatch(answer, /HTTP\/1\.1 2\d\d/);
  assert.equal(h.store.size, 0);
  assert.equal((await fetch(`${h.url}/healthz`)).status, 200);
});

test('a client that stalls mid-request loses its socket at the request timeout', async (t) => {
  const h = await startTestHub(t, { requestTimeoutMs: 500, headersTimeoutMs: 400 });
  const started = Date.now();
  const answer = await rawExchange(h.hub.port, [`POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${h.hub.port}\r\nContent-Length: 1000\r\n\r\nonly part`], 5000);
  assert.ok(Date.now() - started < 4000, 'the server closed the socket itself');
  assert.match(answer, /^HTTP\/1\.1 408 |^$/);
});

function requestWith(url: string, headers: Record<string, string>): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/relays`, { headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('on loopback a foreign Host is refused 403 forbidden_host; localhost and 127.0.0.1 are served', async (t) => {
  const h = await startTestHub(t);
  const port = h.hub.port;
  const evil = await requestWith(h.url, { Host: `evil.example:${port}` });
  assert.equal(evil.status, 403);
  assert.equal(JSON.parse(evil.body).error, 'forbidden_host');
  for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, 'localhost']) assert.equal((await requestWith(h.url, { Host: host })).status, 200, host);
});

test('on loopback a foreign Origin is refused 403 forbidden_origin; a loopback or allowed one is served', async (t) => {
  const h = await startTestHub(t, { allowedOrigins: ['https://dash.example'] });
  const port = h.hub.port;
  const evil = await requestWith(h.url, { Origin: 'http://evil.example' });
  assert.deepEqual([evil.status, JSON.parse(evil.body).error], [403, 'forbidden_origin']);
  assert.equal((await requestWith(h.url, { Origin: `http://localhost:${port}` })).status, 200);
  const allowed = await requestWith(h.url, { Origin: 'https://dash.example' });
  assert.equal(allowed.status, 200);
  assert.equal(allowed.headers['access-control-allow-origin'], 'https://dash.example');
});

test('appends past an agent\'s budget are 429 with Retry-After on REST and "retry in N s" over MCP, one budget for both', async (t) => {
  const h = await startTestHub(t, { agents: ['fast', 'calm'], limits: { appendsPerSecond: 0.2, appendBurst: 2 } });
  const key = await h.key('fast');
  const rest = (n: number) => {
    const body = record({}, `n${n}`);
    return fetch(`${h.url}/relays`, { method: 'POST', headers: { Authorization: sign('fast', key, 'POST', body) }, body });
  };
  assert.equal((await rest(1)).status, 201);
  const client = await httpClient(t, h.url, { agent: 'fast', key });
  assert.equal((await client.callTool({ name: 'append_relay', arguments: { bytes: record({}, 'mcp') } })).isError, undefined);
  const limited = await rest(3);
  assert.equal(limited.status, 429);
  assert.match(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  assert.equal(((await limited.json()) as { error: string }).error, 'rate_limited');
  const overMcp = await client.callTool({ name: 'append_relay', arguments: { bytes: record({}, 'mcp again') } });
  assert.equal(errorCode(overMcp), 'rate_limited');
  assert.match(textOf(overMcp), /retry in \d+ s/);
  // Another agent's budget is its own.
  const calm = await httpClient(t, h.url, { agent: 'calm', key: await h.key('calm') });
  assert.equal((await calm.callTool({ name: 'append_relay', arguments: { bytes: record({}, 'calm') } })).isError, undefined);
  assert.equal(h.store.size, 3);
});

test('an agent may hold only so many waits; the next is refused too_many_waits', async (t) => {
  const h = await startTestHub(t, { agents: ['a', 'b'], limits: { waitsPerAgent: 1 } });
  const a = await httpClient(t, h.url, { agent: 'a', key: await h.key('a') });
  const held = a.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 2_000 } });
  await eventually(() => h.hub.context.gate.waits.active === 1, 'the first wait to be held');
  assert.equal(errorCode(await a.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 2_000 } })), 'too_many_waits');
  const b = await httpClient(t, h.url, { agent: 'b', key: await h.key('b') });
  assert.equal((await b.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 0 } })).isError, undefined);
  await h.store.append(Buffer.from(record()), { depositedBy: 'cli/test' });
  assert.equal((await held).isError, undefined);
});

test('a client that disconnects mid-wait gives its slot back at once', async (t) => {
  const h = await startTestHub(t);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait_for_relay', arguments: { timeout_ms: 60_000 } } });
  const abort = new AbortController();
  const pending = fetch(`${h.url}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: sign('scout-7', await h.key('scout-7'), 'POST', body) },
    body,
    signal: abort.signal,
  }).catch(() => null);
  await eventually(() => h.hub.context.gate.waits.active === 1, 'the wait to be held');
  abort.abort();
  await pending;
  await eventually(() => h.hub.context.gate.waits.active === 0, 'the slot to be released', { timeoutMs: 2000 });
  assert.equal(h.store.waiters.count, 0);
});
