/**
 * Attacks on the HTTP door, as one table. Two hub processes serve one
 * corpus (debug logging on); every row is a request an attacker might send,
 * and each must be refused with the right status and reason and change
 * nothing: the corpus is byte-for-byte the same and no one-time signature
 * entry is spent. At the end, no key and no full signature may appear in
 * either hub's stderr or in any answer the matrix received.
 *
 * The hubs run serveHttp() with a 1 s header timeout and a 2 s request
 * timeout (defaults 10 s and 30 s), so that slow attacks end quickly.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { addKey, readKey, revokeKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import { record, tempStore } from '../support/helpers.js';
import { corpusFingerprint, hubProcess, replayEntries, type HubProcess } from '../support/reliability-helpers.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Send {
  method?: string;
  path: string;
  headers?: Record<string, string | number>;
  body?: string | Buffer;
  /** Send to the second hub process instead of the first. */
  second?: boolean;
}

/** One request on its own connection; Host, Content-Length and the rest exactly as given. */
function send(hub: HubProcess, req: Send): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = req.body ?? '';
    const headers = { Host: `127.0.0.1:${hub.port}`, 'Content-Length': Buffer.byteLength(body), ...req.headers };
    const r = http.request({ host: '127.0.0.1', port: hub.port, method: req.method ?? 'GET', path: req.path, agent: false, setHost: false, headers });
    r.on('response', (res) => {
      // A stream that was let open never ends by itself: its status and headers are the answer.
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.destroy();
        return resolve({ status: res.statusCode!, headers: res.headers, body: '' });
      }
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** Raw bytes on a socket, written in steps `gapMs` apart; resolves with all the server answered once it closes. */
function raw(hub: HubProcess, chunks: (string | Buffer)[], gapMs = 0, timeoutMs = 10_000): Promise<Answer & { closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(hub.port, '127.0.0.1');
    let answer = '';
    let stop = false;
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (d) => (answer += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      stop = true;
      clearTimeout(timer);
      const [head = '', ...rest] = answer.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const headers: http.IncomingHttpHeaders = {};
      for (const line of head.split('\r\n').slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status, headers, body: rest.join('\r\n\r\n'), closedAfterMs: Date.now() - started });
    });
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        if (stop) return;
        socket.write(chunk);
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
      }
    });
    socket.on('timeout', () => reject(new Error('no close')));
  });
}

interface Row {
  name: string;
  /** What is sent; a function so each row signs at the moment it runs. */
  attack: (ctx: Ctx) => Promise<Answer>;
  /** The status expected (either of a list; 0 is a connection closed with no answer). */
  status: number | number[];
  /** The `error` field of the JSON body (or of a tool result's _meta), when the hub itself answers. */
  code?: string;
  /** Extra checks on the answer. */
  check?: (answer: Answer, ctx: Ctx) => void;
  /**
   * Refused after its signature was verified (the id or the record is what is
   * wrong): that one signature is spent, as any verified request's is. Every
   * other row must spend none.
   */
  spends?: true;
}

interface Ctx {
  hub: HubProcess;
  hub2: HubProcess;
  alice: Buffer;
  revokedKey: Buffer;
  /** Every Authorization value any row sent, so none of their signatures may echo back. */
  sent: string[];
  /** A request that was accepted once in the setup, for the replay rows. */
  spent: { body: Buffer; authorization: string };
}

const BODY = Buffer.from(record({ kind: 'attack' }, 'this must never be stored'));
let uniqueBodies = 0;
/** A body no other row signs: rows whose signature gets spent must not share one. */
const fresh = () => Buffer.from(record({ kind: 'attack' }, `this must never be stored (${uniqueBodies++})`));
const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
/** One name past what a filter may list and a record's to: may name (64 each). */
const WIDE = Array.from({ length: 65 }, (_, i) => `n${i}`);
/** A record addressed to WIDE, no other row's bytes. */
const wide = () => Buffer.from(record({ kind: 'attack', to: WIDE.join(', ') }, `this must never be stored (${uniqueBodies++})`));

/** The time at the start of a fresh second, waiting for one when less than 900 ms of this one are left. */
async function secondStart(): Promise<number> {
  const into = Date.now() % 1000;
  if (into > 100) await new Promise((r) => setTimeout(r, 1000 - into));
  return Math.floor(Date.now() / 1000) * 1000;
}

function signed(ctx: Ctx, method: string, body: string | Buffer, options: { agent?: string; key?: Buffer; atMs?: number } = {}): string {
  const value = authorizationFor(options.agent ?? 'alice', options.key ?? ctx.alice, method, Buffer.from(body), options.atMs);
  ctx.sent.push(value);
  return value;
}

function toolCall(name: string, args: Record<string, unknown>, id = 1): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
}

/** The code of a refusal: a tool result's _meta, a JSON-RPC error's data, or a REST error body. */
function codeOf(answer: Answer): string | undefined {
  if (answer.status === 200) return toolCode(answer);
  const error = (JSON.parse(answer.body) as { error?: string | { data?: { code?: string } } }).error;
  return typeof error === 'object' ? error.data?.code : error;
}

/** The code a tool result refused with, from its _meta. */
function toolCode(answer: Answer): string | undefined {
  const parsed = JSON.parse(answer.body) as { result?: { isError?: boolean; _meta?: Record<string, { code?: string }> } };
  return parsed.result?.isError ? parsed.result._meta?.['p-e-relay/error']?.code : undefined;
}

const post = (ctx: Ctx, path: string, body: string | Buffer, authorization?: string, extra: Record<string, string> = {}): Promise<Answer> =>
  send(ctx.hub, { method: 'POST', path, body, headers: { ...(authorization === undefined ? {} : { Authorization: authorization }), ...extra } });

/** A batch is answered as exactly one JSON-RPC error (not an array of them): -32600, batch_refused, id null. */
function oneBatchRefusal(answer: Answer): void {
  const parsed = JSON.parse(answer.body) as { jsonrpc?: string; id?: unknown; error?: { code?: number; data?: { code?: string } } };
  assert.ok(!Array.isArray(parsed), 'one answer, not one per message');
  assert.deepEqual([parsed.jsonrpc, parsed.id, parsed.error?.code, parsed.error?.data?.code], ['2.0', null, -32600, 'batch_refused']);
}

const ROWS: Row[] = [
  // ---- credentials ---------------------------------------------------------------------
  { name: 'no Authorization on an append', status: 401, code: 'unsigned', attack: (c) => post(c, '/relays', BODY) },
  { name: 'no Authorization on the event stream', status: 401, code: 'unsigned', attack: (c) => send(c.hub, { path: '/events' }) },
  {
    name: 'no Authorization on an MCP append: a tool refusal, nothing stored, naming the bridge for clients that cannot sign',
    status: 200,
    code: 'unsigned',
    attack: (c) => post(c, '/mcp', toolCall('append_relay', { bytes: BODY.toString() }), undefined, MCP_HEADERS),
    check: (a) => assert.match((JSON.parse(a.body) as { result: { content: { text: string }[] } }).result.content[0]!.text, /`p-e-relay bridge --url <this hub> --agent <name>`/),
  },
  { name: 'garbled Authorization', status: 401, code: 'malformed_authorization', attack: (c) => post(c, '/relays', BODY, 'PE-HMAC %%%garbage%%%') },
  { name: 'another scheme', status: 401, code: 'malformed_authorization', attack: (c) => post(c, '/relays', BODY, 'Bearer eyJhbGciOiJub25lIn0.e30.') },
  { name: 'a field given twice', status: 401, code: 'malformed_authorization', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY).replace(', sig=', ', agent=mallory, sig=')) },
  { name: 'an agent name that walks out of keys/', status: 401, code: 'malformed_authorization', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY).replace('agent=alice', 'agent=../corpus/relay-0001')) },
  { name: 'a ts that is not decimal seconds', status: 401, code: 'malformed_authorization', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY).replace(/ts=\d+/, 'ts=1.7e9')) },
  { name: 'a sig in upper case', status: 401, code: 'malformed_authorization', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY).replace(/sig=([0-9a-f]+)/, (_, s: string) => `sig=${s.toUpperCase()}`)) },
  { name: 'an unknown agent', status: 401, code: 'unknown_agent', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY, { agent: 'mallory' })) },
  { name: 'a revoked key', status: 401, code: 'unknown_agent', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY, { agent: 'revoked', key: c.revokedKey })) },
  { name: 'a made-up signature', status: 401, code: 'bad_signature', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY).replace(/sig=[0-9a-f]+/, `sig=${'ab'.repeat(32)}`)) },
  { name: 'a signature by another agent\'s key', status: 401, code: 'bad_signature', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY, { key: c.revokedKey })) },
  {
    name: 'a signature over different bytes (the same JSON, re-serialised)',
    status: 401,
    code: 'bad_signature',
    attack: (c) => {
      const call = JSON.parse(toolCall('append_relay', { bytes: BODY.toString() })) as unknown;
      return post(c, '/mcp', JSON.stringify(call, null, 2), signed(c, 'POST', JSON.stringify(call)), MCP_HEADERS);
    },
  },
  { name: 'a signature made for GET, sent with POST', status: 401, code: 'bad_signature', attack: (c) => post(c, '/relays', BODY, signed(c, 'GET', BODY)) },
  { name: 'a signature made for POST, sent with GET (the stream)', status: 401, code: 'bad_signature', attack: (c) => send(c.hub, { path: '/events', headers: { Authorization: signed(c, 'POST', '') } }) },
  { name: 'ts 61 s in the past', status: 401, code: 'stale_timestamp', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY, { atMs: Date.now() - 61_000 })) },
  {
    // Signed at the start of a second, so the hub checks it within the same second: 61 s ahead of the
    // hub's clock exactly, not 60 (the hub's second may not tick past ours between signing and checking).
    name: 'ts 61 s in the future',
    status: 401,
    code: 'stale_timestamp',
    attack: async (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY, { atMs: (await secondStart()) + 61_000 })),
    check: (a) => assert.equal(JSON.parse(a.body).message.match(/is (\d+) s ahead/)?.[1], '61', a.body),
  },
  { name: 'a replay on the same hub', status: 401, code: 'replayed_signature', attack: (c) => post(c, '/relays', c.spent.body, c.spent.authorization) },
  { name: 'a replay on a second hub process', status: 401, code: 'replayed_signature', attack: (c) => send(c.hub2, { method: 'POST', path: '/relays', body: c.spent.body, headers: { Authorization: c.spent.authorization } }) },
  {
    name: 'a signature in both the header and the query',
    status: 401,
    code: 'malformed_authorization',
    attack: (c) => {
      const header = signed(c, 'GET', '');
      const [, agent, ts, sig] = /agent=(\S+), ts=(\d+), sig=([0-9a-f]+)/.exec(header)!;
      return send(c.hub, { path: `/events?agent=${agent}&ts=${ts}&sig=${sig}`, headers: { Authorization: header } });
    },
  },
  { name: 'a signed body with a Content-Encoding', status: 415, code: 'encoded_body', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY), { 'Content-Encoding': 'gzip' }) },

  // ---- bodies ------------------------------------------------------------------------
  {
    name: 'a signed body over the 64 KiB cap, honestly declared',
    status: 413,
    code: 'too_large',
    attack: (c) => {
      const big = Buffer.from(record({ kind: 'big' }, 'x'.repeat(70_000)));
      return post(c, '/relays', big, signed(c, 'POST', big));
    },
  },
  {
    // Node reads 16 bytes as the body and the rest as a next request, which is not HTTP: 400 and the
    // connection closed (0 when the reset that follows reaches the client before the 400 is read).
    name: 'a Content-Length that lies low',
    status: [400, 0],
    attack: (c) => {
      const big = Buffer.from(record({ kind: 'big' }, 'y'.repeat(70_000)));
      return raw(c.hub, [`POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${c.hub.port}\r\nAuthorization: ${signed(c, 'POST', big)}\r\nContent-Length: 16\r\n\r\n`, big]);
    },
  },
  {
    name: 'a Content-Length that lies high (the body never comes)',
    status: 408,
    attack: (c) => raw(c.hub, [`POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${c.hub.port}\r\nAuthorization: ${signed(c, 'POST', BODY)}\r\nContent-Length: 60000\r\n\r\n`, BODY]),
    check: (a) => assert.ok((a as Answer & { closedAfterMs: number }).closedAfterMs < 5000, 'cut off by the request timeout'),
  },
  {
    name: 'a chunked body that grows past the cap',
    status: 413,
    code: 'too_large',
    attack: (c) => {
      const chunk = Buffer.alloc(8192, 'z');
      const chunks: Buffer[] = Array.from({ length: 10 }, () => Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
      const whole = Buffer.concat(Array.from({ length: 10 }, () => chunk));
      return raw(c.hub, [`POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${c.hub.port}\r\nAuthorization: ${signed(c, 'POST', whole)}\r\nTransfer-Encoding: chunked\r\n\r\n`, ...chunks, '0\r\n\r\n']);
    },
  },
  {
    name: 'both Transfer-Encoding and Content-Length (request smuggling)',
    status: 400,
    attack: (c) => raw(c.hub, [Buffer.concat([Buffer.from(`POST /relays HTTP/1.1\r\nHost: 127.0.0.1:${c.hub.port}\r\nAuthorization: ${signed(c, 'POST', BODY)}\r\nContent-Length: ${BODY.length}\r\nTransfer-Encoding: chunked\r\n\r\n${BODY.length.toString(16)}\r\n`), BODY, Buffer.from('\r\n0\r\n\r\n')])]),
  },
  { name: 'an Authorization header of 20 KB', status: 431, attack: (c) => post(c, '/relays', BODY, `PE-HMAC agent=alice, ts=1, sig=${'a'.repeat(20_000)}`) },
  {
    name: 'slowloris: headers trickled one line every 250 ms',
    status: 408,
    attack: (c) => raw(c.hub, ['POST /relays HTTP/1.1\r\n', `Host: 127.0.0.1:${c.hub.port}\r\n`, ...Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: ${i}\r\n`)], 250),
    check: (a) => assert.ok((a as Answer & { closedAfterMs: number }).closedAfterMs < 4000, `cut off by the header timeout, not after every line (${(a as Answer & { closedAfterMs: number }).closedAfterMs} ms)`),
  },

  // ---- what a signature buys, and what every route checks -----------------------------------------
  { name: 'a signed GET /healthz: checked, answered, and not spent (it buys nothing)', status: 200, attack: (c) => send(c.hub, { path: '/healthz', headers: { Authorization: signed(c, 'GET', '') } }) },
  { name: 'a signed GET /relays: not spent', status: 200, attack: (c) => send(c.hub, { path: '/relays', headers: { Authorization: signed(c, 'GET', '') } }) },
  {
    name: 'a signed MCP ping: answered, and not spent',
    status: 200,
    attack: (c) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' });
      return post(c, '/mcp', body, signed(c, 'POST', body), MCP_HEADERS);
    },
    check: (a) => assert.deepEqual(JSON.parse(a.body).result, {}),
  },
  {
    name: 'a signed MCP get_relay: answered, and not spent',
    status: 200,
    attack: (c) => {
      const body = toolCall('get_relay', { id: 'relay-0001' });
      return post(c, '/mcp', body, signed(c, 'POST', body), MCP_HEADERS);
    },
    check: (a) => assert.equal(toolCode(a), undefined, a.body),
  },
  { name: 'a wrong credential on GET / (the web view)', status: 401, code: 'bad_signature', attack: (c) => send(c.hub, { path: '/', headers: { Authorization: signed(c, 'GET', '', { key: c.revokedKey }) } }) },
  { name: 'a wrong credential on GET /assets/app.js', status: 401, code: 'bad_signature', attack: (c) => send(c.hub, { path: '/assets/app.js', headers: { Authorization: signed(c, 'GET', '', { key: c.revokedKey }) } }) },
  { name: 'a wrong credential on GET /mcp', status: 401, code: 'bad_signature', attack: (c) => send(c.hub, { path: '/mcp', headers: { Authorization: signed(c, 'GET', '', { key: c.revokedKey }) } }) },
  { name: 'an unknown agent on GET /no/such/route', status: 401, code: 'unknown_agent', attack: (c) => send(c.hub, { path: '/no/such/route', headers: { Authorization: signed(c, 'GET', '', { agent: 'mallory' }) } }) },
  {
    name: 'a JSON-RPC batch of 100 get_relay calls (amplification): refused as one JSON-RPC error',
    status: 400,
    code: 'batch_refused',
    attack: (c) => post(c, '/mcp', `[${Array.from({ length: 100 }, (_, i) => toolCall('get_relay', { id: 'relay-0001' }, i + 1)).join(',')}]`, undefined, MCP_HEADERS),
    check: oneBatchRefusal,
  },
  {
    name: 'a signed batch of 20 appends (one signature for many): refused, nothing spent',
    status: 400,
    code: 'batch_refused',
    check: oneBatchRefusal,
    attack: (c) => {
      const body = `[${Array.from({ length: 20 }, (_, i) => toolCall('append_relay', { bytes: fresh().toString() }, i + 1)).join(',')}]`;
      return post(c, '/mcp', body, signed(c, 'POST', body), MCP_HEADERS);
    },
  },
  {
    name: 'a signed MCP append whose body holds a byte that is not UTF-8',
    status: 400,
    code: 'not_utf8',
    attack: (c) => {
      const [head, tail] = toolCall('append_relay', { bytes: record({ kind: 'attack' }, 'latin-1: XX') }).split('XX');
      const body = Buffer.concat([Buffer.from(head!), Buffer.from([0xe9]), Buffer.from(tail!)]);
      return post(c, '/mcp', body, signed(c, 'POST', body), MCP_HEADERS);
    },
    check: (a) => assert.equal(JSON.parse(a.body).error.code, -32700),
  },

  // ---- where the request claims to come from ---------------------------------------------
  { name: 'a rebinding Host (a signed, otherwise good append)', status: 403, code: 'forbidden_host', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY), { Host: 'evil.example' }) },
  { name: 'a loopback-looking Host that is not', status: 403, code: 'forbidden_host', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY), { Host: `127.0.0.1.nip.io:${c.hub.port}` }) },
  { name: 'the right name on another port', status: 403, code: 'forbidden_host', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY), { Host: '127.0.0.1:1' }) },
  { name: 'no Host at all (HTTP/1.0)', status: 403, code: 'forbidden_host', attack: (c) => raw(c.hub, [`GET /relays/relay-0001 HTTP/1.0\r\n\r\n`]) },
  { name: 'a foreign Origin (a signed, otherwise good append)', status: 403, code: 'forbidden_origin', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY), { Origin: 'http://evil.example' }) },
  { name: 'an Origin that only starts like ours', status: 403, code: 'forbidden_origin', attack: (c) => post(c, '/relays', BODY, signed(c, 'POST', BODY), { Origin: `http://127.0.0.1:${c.hub.port}.evil.example` }) },
  { name: 'the null Origin (a sandboxed page)', status: 403, code: 'forbidden_origin', attack: (c) => send(c.hub, { path: '/relays', headers: { Origin: 'null' } }) },

  // ---- paths and ids that try to leave the corpus ------------------------------------------
  { name: 'GET /relays/..%2fkeys%2falice.key', status: 404, code: 'not_found', attack: (c) => send(c.hub, { path: '/relays/..%2fkeys%2falice.key' }), check: (a) => assert.equal(JSON.parse(a.body).state, 'UNKNOWN') },
  { name: 'GET /relays/..%2f..%2fkeys%2falice.key', status: 404, code: 'not_found', attack: (c) => send(c.hub, { path: '/relays/..%2f..%2fkeys%2falice.key' }) },
  { name: 'GET /relays/relay-0001%00', status: 404, code: 'not_found', attack: (c) => send(c.hub, { path: '/relays/relay-0001%00' }) },
  { name: 'GET /relays/relay-0001%2f..%2f.state%2fissued', status: 404, code: 'not_found', attack: (c) => send(c.hub, { path: '/relays/relay-0001%2f..%2f.state%2fissued' }) },
  { name: 'GET /relays/%2e%2e/keys/alice.key (dot segments)', status: 404, code: 'no_route', attack: (c) => send(c.hub, { path: '/relays/%2e%2e/keys/alice.key' }) },
  { name: 'GET /relays/%2e%2e%2f%2e%2e%2fetc%2fpasswd', status: 404, code: 'not_found', attack: (c) => send(c.hub, { path: '/relays/%2e%2e%2f%2e%2e%2fetc%2fpasswd' }) },
  { name: 'GET /assets/..%2f..%2fkeys%2falice.key (the web view\'s files)', status: 404, code: 'not_found', attack: (c) => send(c.hub, { path: '/assets/..%2f..%2fkeys%2falice.key' }) },
  { name: 'GET /../keys/alice.key on a raw socket', status: 404, code: 'no_route', attack: (c) => raw(c.hub, [`GET /../keys/alice.key HTTP/1.1\r\nHost: 127.0.0.1:${c.hub.port}\r\nConnection: close\r\n\r\n`]) },
  { name: 'HEAD /relays/..%2fkeys%2falice.key', status: 404, attack: (c) => send(c.hub, { method: 'HEAD', path: '/relays/..%2fkeys%2falice.key' }), check: (a) => assert.equal(a.headers['p-e-relay-state'], 'UNKNOWN') },
  { name: 'GET /relays/..%2fkeys/replies', status: 200, attack: (c) => send(c.hub, { path: '/relays/..%2fkeys/replies' }), check: (a) => assert.match(a.body, /^replies to \.\.\/keys \(0\):/) },
  { name: 'GET /relays?after=../keys', status: 400, code: 'bad_id', attack: (c) => send(c.hub, { path: '/relays?after=../keys' }) },
  { name: 'a signed POST /relays?id=../keys/alice.key', status: 400, code: 'bad_id', spends: true, attack: (c) => { const b = fresh(); return post(c, '/relays?id=..%2fkeys%2falice.key', b, signed(c, 'POST', b)); } },
  { name: 'a signed POST /relays?id=relay-0001%2f..%2fx', status: 400, code: 'bad_id', spends: true, attack: (c) => { const b = fresh(); return post(c, '/relays?id=relay-0001%2f..%2fx', b, signed(c, 'POST', b)); } },
  {
    name: 'a signed MCP append_relay with id ../../keys/alice.key',
    status: 200,
    code: 'bad_id',
    spends: true,
    attack: (c) => {
      const body = toolCall('append_relay', { id: '../../keys/alice.key', bytes: fresh().toString() });
      return post(c, '/mcp', body, signed(c, 'POST', body), MCP_HEADERS);
    },
  },
  { name: 'MCP get_relay of ../keys/alice.key', status: 200, code: 'not_found', attack: (c) => post(c, '/mcp', toolCall('get_relay', { id: '../keys/alice.key' }), undefined, MCP_HEADERS) },
  { name: 'overwriting a record: PUT /relays/relay-0001', status: 405, code: 'method_not_allowed', attack: (c) => send(c.hub, { method: 'PUT', path: '/relays/relay-0001', body: BODY, headers: { Authorization: signed(c, 'PUT', BODY) } }) },
  { name: 'deleting a record: DELETE /relays/relay-0001', status: 405, code: 'method_not_allowed', attack: (c) => send(c.hub, { method: 'DELETE', path: '/relays/relay-0001', headers: { Authorization: signed(c, 'DELETE', '') } }) },
  {
    name: 'a signed append proposing a held id (overwrite by proposal)',
    status: 409,
    code: 'id_held',
    spends: true,
    attack: (c) => {
      const b = fresh();
      return post(c, '/relays?id=relay-0001', b, signed(c, 'POST', b));
    },
  },

  // ---- what one call may make the hub watch and ring ---------------------------------------------
  // Last: these spend their signature, and a signed GET of '' made in the same second as another is the same signature.
  {
    name: 'a signed GET /events whose to: names 65 names (a doorbell file and an inotify watch per name): refused bad_filter, naming the cap',
    status: 400,
    code: 'bad_filter',
    spends: true,
    attack: (c) => send(c.hub, { path: `/events?to=${WIDE.join(',')}`, headers: { Authorization: signed(c, 'GET', '') } }),
    check: (a) => assert.match(JSON.parse(a.body).message, /names 65 names; a filter may name at most 64/),
  },
  {
    name: 'a signed MCP wait_for_relay whose to: names 65 names: a tool refusal, bad_filter, no wait held',
    status: 200,
    code: 'bad_filter',
    spends: true,
    attack: (c) => {
      const body = toolCall('wait_for_relay', { to: WIDE, after: 'relay-0000', timeout_ms: 0 });
      return post(c, '/mcp', body, signed(c, 'POST', body), MCP_HEADERS);
    },
  },
  {
    name: 'a signed append whose to: names 65 recipients (a ring and index entries per recipient): refused too_many_recipients',
    status: 400,
    code: 'too_many_recipients',
    spends: true,
    attack: (c) => {
      const b = wide();
      return post(c, '/relays', b, signed(c, 'POST', b));
    },
    check: (a) => assert.match(JSON.parse(a.body).message, /65 recipients; at most 64/),
  },
  {
    name: 'a signed MCP append_relay whose to: names 65 recipients: a tool refusal, too_many_recipients',
    status: 200,
    code: 'too_many_recipients',
    spends: true,
    attack: (c) => {
      const body = toolCall('append_relay', { bytes: wide().toString() });
      return post(c, '/mcp', body, signed(c, 'POST', body), MCP_HEADERS);
    },
  },
];

test(`the attack matrix: ${ROWS.length} attacks on two hub processes, each refused with its status and reason and no side effect; no key or signature ever echoed`, { timeout: 120_000 }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'alice');
  await addKey(keys, 'revoked');
  const alice = (await readKey(keys, 'alice'))!;
  const revokedKey = (await readKey(keys, 'revoked'))!;
  await revokeKey(keys, 'revoked');
  const tuned = { headersTimeoutMs: 1000, requestTimeoutMs: 2000 };
  const [hub, hub2] = await Promise.all([0, 1].map(() => hubProcess(t, corpus, keys, { tuned, env: { P_E_RELAY_LOG: 'debug' } })));
  const ctx: Ctx = { hub: hub!, hub2: hub2!, alice, revokedKey, sent: [], spent: { body: Buffer.alloc(0), authorization: '' } };

  // One good append: a record to aim at, and a signature spent, for the replay rows.
  const spent = { body: Buffer.from(record({ kind: 'genuine' }, 'the one good append')), authorization: '' };
  spent.authorization = signed(ctx, 'POST', spent.body);
  const first = await post(ctx, '/relays', spent.body, spent.authorization);
  assert.equal(first.status, 201, first.body);
  ctx.spent = spent;

  const answers: string[] = [];
  for (const row of ROWS) {
    const corpusBefore = await corpusFingerprint(corpus);
    const replayBefore = await replayEntries(corpus);
    const answer = await row.attack(ctx);
    answers.push(JSON.stringify(answer.headers), answer.body);
    assert.ok([row.status].flat().includes(answer.status), `${row.name}: status ${answer.status}, ${answer.body.slice(0, 300)}`);
    if (row.code !== undefined) {
      assert.equal(codeOf(answer), row.code, `${row.name}: ${answer.body.slice(0, 300)}`);
    }
    if (answer.status === 401) assert.match(String(answer.headers['www-authenticate']), /^PE-HMAC realm="p-e-relay", error="/, row.name);
    row.check?.(answer, ctx);
    assert.deepEqual(await corpusFingerprint(corpus), corpusBefore, `${row.name}: the corpus is unchanged`);
    const replayAfter = await replayEntries(corpus);
    if (row.spends) assert.equal(replayAfter.length, replayBefore.length + 1, `${row.name}: its own verified signature, and nothing else, was spent`);
    else assert.deepEqual(replayAfter, replayBefore, `${row.name}: no one-time signature was spent`);
    for (const h of [hub!, hub2!]) assert.equal(h.child.exitCode, null, `${row.name}: the hub is still running`);
  }

  // The refused but otherwise good appends spent nothing: the same signed request, sent properly, lands.
  const retry = signed(ctx, 'POST', BODY);
  const rebind = await post(ctx, '/relays', BODY, retry, { Host: 'evil.example' });
  assert.equal(rebind.status, 403);
  const proper = await post(ctx, '/relays', BODY, retry);
  assert.equal(proper.status, 201, 'the signature refused at the door was still unspent');

  // Nothing secret ever came back or went to a log, even at debug level.
  await Promise.all([hub!.stop(), hub2!.stop()]);
  const seen = [...answers, hub!.stderr(), hub2!.stderr()].join('\n');
  for (const key of [alice, revokedKey]) assert.ok(!seen.includes(key.toString()), 'a key appears in an answer or a log');
  const sigs = ctx.sent.map((a) => /sig=([0-9a-f]{64})/.exec(a)?.[1]).filter((s): s is string => s !== undefined);
  assert.ok(sigs.length > 30);
  for (const sig of sigs) assert.ok(!seen.includes(sig), `the signature ${sig.slice(0, 8)}… appears in an answer or a log`);
  t.diagnostic(`attacks refused: ${ROWS.length} rows on 2 hub processes; corpus changes 0; signatures spent by refusals before verification 0; keys or signatures echoed 0`);
});

test('one signature sent to two hub processes (and twice to one) at the same instant is accepted exactly once', async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'alice');
  const alice = (await readKey(keys, 'alice'))!;
  const [hub, hub2] = await Promise.all([0, 1].map(() => hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'warn' } })));
  const rounds = 20;
  for (let i = 0; i < rounds; i++) {
    const body = Buffer.from(record({ kind: 'race' }, `race ${i}`));
    const authorization = authorizationFor('alice', alice, 'POST', body);
    const answers = await Promise.all([hub!, hub2!, hub!, hub2!].map((h) => send(h, { method: 'POST', path: '/relays', body, headers: { Authorization: authorization } })));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [201, 401, 401, 401], `round ${i}: ${answers.map((a) => a.body).join(' | ')}`);
    for (const a of answers) if (a.status === 401) assert.equal(JSON.parse(a.body).error, 'replayed_signature');
  }
  const records = [...(await corpusFingerprint(corpus)).keys()].filter((n) => n.startsWith('relay-'));
  assert.equal(records.length, rounds, 'one record per signature, never two');
});
