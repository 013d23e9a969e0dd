/**
 * A fuzz loop against live processes: random and mutated JSON-RPC bodies
 * and records, sent to a hub (POST /mcp and POST /relays, signed over the
 * exact bytes sent, or not) and, line by line, to a stdio server, both on
 * one corpus. The processes must never die, every answer must be a
 * well-formed result or refusal, and afterwards the corpus must hold only
 * whole records, each exactly the bytes of some append that was sent.
 *
 * `npm test`: 300 inputs per door. P_E_RELAY_LONG=1: 5,000 per door.
 * P_E_RELAY_FUZZ_SEED=N replays a run (the seed is printed).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { authorizationFor } from '../../lib/auth/sign.js';
import { digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { ERROR_STATUS } from '../../lib/errors.js';
import { idShape } from '../../lib/model/ids.js';
import { verifyCorpus } from '../../lib/ops/verify.js';
import { record, tempStore } from '../support/helpers.js';
import { hubProcess, pool, rawStdio, scale, type RawAnswer } from '../support/reliability-helpers.js';
import { mulberry32 } from '../../bench/lib/corpus.js';

const INPUTS = scale(300, 5000);
const SEED = Number(process.env.P_E_RELAY_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const shape = idShape();

// ---- a small seeded generator (the bench's mulberry32: same seed, same inputs) ----------

class Gen {
  constructor(readonly random: () => number) {}
  int(max: number): number {
    return Math.floor(this.random() * max);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
  /**
   * Text with the characters that break parsers: quotes, escapes, controls,
   * line breaks, astral and combining characters, and (when hostile) NUL and
   * lone surrogates, which no record may hold.
   */
  text(max = 20, hostile = this.chance(0.3)): string {
    const alphabet = ['a', 'Z', '0', ' ', ':', ',', '"', '\\', '\n', '\r', '\t', '\u0001', '\u2028', 'é', 'e\u0301', '漢', '😀', '\ufeff', '-', '/', '.', '@p-e/x0', 'relay-0001', 'relay-', '%2e', '{', '['];
    const worse = ['\0', '\ud800', '\udc00'];
    return Array.from({ length: this.int(max + 1) }, () => (hostile && this.chance(0.05) ? this.pick(worse) : this.pick(alphabet))).join('');
  }
  json(depth = 0): unknown {
    const kind = this.int(depth > 2 ? 5 : 8);
    switch (kind) {
      case 0: return null;
      case 1: return this.chance(0.5);
      case 2: return this.pick([0, -1, 1.5, 1e308, -0, 2 ** 53 + 1, 90_001, Number.MAX_SAFE_INTEGER]);
      case 3: return this.text();
      case 4: return this.pick(['relay-0001', 'relay-0000', 'relay-9999', '../keys/a.key', 'RELAY-0001', 'relay-1', '', ' ']);
      case 5: return Array.from({ length: this.int(4) }, () => this.json(depth + 1));
      default: return Object.fromEntries(Array.from({ length: this.int(4) }, () => [this.pick(['id', 'bytes', 'after', 'timeout_ms', 'name', '__proto__', 'constructor', this.text(6)]), this.json(depth + 1)]));
    }
  }
  /** A record: usually valid, often bent in one of the ways that matter. */
  record(): string {
    const headers: Record<string, string> = {};
    for (const key of ['kind', 'from', 'to', 'parent', 'ref']) if (this.chance(0.5)) headers[key] = key === 'parent' || key === 'ref' ? shape.format(1 + this.int(40)) : this.text(8).replace(/[\r\n]/g, '');
    let text = record(headers, this.text(60));
    switch (this.int(10)) {
      case 0: text = text.replace('@p-e/x0', this.pick(['@p-e/x1', '@P-E/X0', ' @p-e/x0', '\ufeff@p-e/x0', ''])); break;
      case 1: text = text.replace(/\n/g, '\r\n'); break;
      case 2: text = `${text}\nref: ${Array.from({ length: 70 }, (_, i) => shape.format(i + 1)).join(' ')}`.replace('\n\n', `\nref: ${Array.from({ length: 70 }, (_, i) => shape.format(100 + i)).join(',')}\n\n`); break;
      case 3: text += '\0'; break;
      case 4: text += 'x'.repeat(this.pick([1000, 70_000])); break;
      default: break;
    }
    return text;
  }
}

// ---- JSON-RPC inputs ----------------------------------------------------------------------

const TOOLS = ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay'];

function seedMessage(g: Gen, id: number): Record<string, unknown> {
  const call = (name: string, args: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  switch (g.int(10)) {
    case 0: return { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: g.pick(['2025-06-18', '2024-11-05', '1999-01-01']), capabilities: {}, clientInfo: { name: 'fuzz', version: '0' } } };
    case 1: return { jsonrpc: '2.0', id, method: g.pick(['tools/list', 'ping', 'resources/list', 'prompts/list', 'nonsense']) };
    case 2: return { jsonrpc: '2.0', method: g.pick(['notifications/initialized', 'notifications/cancelled', 'notifications/progress']), params: { requestId: id } };
    case 3: case 4: case 5: return call('append_relay', g.chance(0.8) ? { bytes: g.record() } : { id: g.json(), bytes: g.record() });
    case 6: return call(g.pick(['exists', 'get_relay', 'list_replies']), { id: g.json() });
    case 7: return call('list_relays', g.chance(0.5) ? {} : { after: g.json() });
    case 8: return call('wait_for_relay', { after: g.pick(['relay-0000', 'relay-0001', undefined]), timeout_ms: g.int(50) });
    default: return call(g.pick(TOOLS), g.json());
  }
}

/** One JSON-level mutation of a message: a value swapped for another type, a key removed or added. */
function mutate(g: Gen, value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > 3 || g.chance(0.25)) return g.chance(0.5) ? g.json() : value;
  if (Array.isArray(value)) return value.map((v) => (g.chance(0.3) ? mutate(g, v, depth + 1) : v));
  const entries = Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) {
    if (g.chance(0.1)) continue;
    out[k] = g.chance(0.4) ? mutate(g, v, depth + 1) : v;
  }
  if (g.chance(0.2)) out[g.pick(['id', 'method', 'params', 'jsonrpc', 'result', 'error', g.text(5)])] = g.json();
  return out;
}

/**
 * Waits must not block the loop: any wait_for_relay that would wait gets a
 * short timeout; true when one did. Unknown argument keys are dropped by the
 * tool's schema, so a call whose `timeout_ms` or `arguments` key was spliced
 * into another name waits the default 30 s: that is why this runs on the
 * final text too, not only on the message before it is bent.
 */
function shortenWaits(g: Gen, message: unknown): boolean {
  let shortened = false;
  for (const m of Array.isArray(message) ? message : [message]) {
    const params = (m as { params?: { name?: unknown; arguments?: unknown } } | null)?.params;
    if (params && typeof params === 'object' && params.name === 'wait_for_relay') {
      if (params.arguments === undefined || params.arguments === null) params.arguments = {};
      const args = params.arguments as Record<string, unknown>;
      if (typeof args === 'object' && !(typeof args.timeout_ms === 'number' && args.timeout_ms < 50)) {
        args.timeout_ms = g.int(50);
        shortened = true;
      }
    }
  }
  return shortened;
}

/** A body for /mcp or a line for stdio: a mutated message, a batch, or text that is hardly JSON at all. */
function jsonRpcInput(g: Gen, id: number): string {
  const form = g.int(10);
  let message: unknown = seedMessage(g, id);
  if (form < 4) message = mutate(g, message);
  if (form === 4) message = [seedMessage(g, id), mutate(g, seedMessage(g, id + 0.5))];
  if (form === 5) message = g.json();
  shortenWaits(g, message);
  let text = JSON.stringify(message) ?? 'null';
  if (form === 6) text = text.slice(0, g.int(text.length)); // cut short
  if (form === 7) {
    const at = g.int(text.length + 1);
    text = text.slice(0, at) + g.text(4) + text.slice(at); // characters spliced in
    const bent = parsedOrNull(text);
    if (bent !== null && shortenWaits(g, bent)) {
      text = JSON.stringify(bent);
      unhiddenWaits++;
    }
  }
  return text;
}

/** Spliced inputs that were waits of the default 30 s, shortened (the diagnostic counts them). */
let unhiddenWaits = 0;

function parsedOrNull(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** Every record byte string an input could have carried (as append_relay bytes), by digest. */
function recordsIn(text: string, into: Set<string>): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return;
  }
  for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
    const bytes = (m as { params?: { arguments?: { bytes?: unknown } } } | null)?.params?.arguments?.bytes;
    if (typeof bytes === 'string') into.add(digestOf(Buffer.from(bytes, 'utf8')));
  }
}

// ---- what a well-formed answer is ---------------------------------------------------------

function assertJsonRpcMessage(m: unknown, where: string): void {
  assert.ok(m !== null && typeof m === 'object' && !Array.isArray(m), `${where}: not a JSON-RPC object`);
  const msg = m as { jsonrpc?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown }; method?: unknown };
  assert.equal(msg.jsonrpc, '2.0', where);
  if (msg.method !== undefined) return; // a notification (progress)
  assert.ok((msg.result === undefined) !== (msg.error === undefined), `${where}: exactly one of result and error`);
  if (msg.error) {
    assert.equal(typeof msg.error.code, 'number', where);
    assert.equal(typeof msg.error.message, 'string', where);
  } else {
    const result = msg.result as { isError?: boolean; content?: { type: string; text?: string }[] };
    if (result.isError) assert.ok(result.content?.[0]?.text, `${where}: a refusal says why`);
  }
}

/** A hub refusal: {"error": CODE, "message": SENTENCE} with the status of its code. */
function assertRefusal(status: number, body: unknown, where: string): void {
  const e = body as { error?: unknown; message?: unknown };
  assert.ok(typeof e.error === 'string' && e.error in ERROR_STATUS, `${where}: unknown error ${String(e.error)}`);
  assert.equal(status, ERROR_STATUS[e.error as keyof typeof ERROR_STATUS], `${where}: status of ${e.error}`);
  assert.ok(typeof e.message === 'string' && e.message.length > 10, `${where}: a sentence`);
}

/**
 * How long one answer may take before the loop calls it a hang. Every input
 * is bounded (waits ≤ 50 ms, records ≤ 71 KB), so an answer this late is a
 * hang, not a busy machine: the whole loop takes ~10 s at load 14–17 on 2 cores.
 */
const HANG_MS = 60_000;

function post(port: number, path: string, body: Buffer, headers: Record<string, string>): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent: false, headers: { ...headers, 'Content-Length': body.length }, timeout: HANG_MS });
    req.on('timeout', () => req.destroy(new Error(`no answer in ${HANG_MS / 1000} s to ${path}: ${body.toString().slice(0, 200)}`)));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type'] ?? ''), text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// ---- the loop -----------------------------------------------------------------------------

test(`fuzz: ${INPUTS} random and mutated inputs to each of POST /mcp, POST /relays and a stdio server; nothing dies, every answer is well-formed, only whole records as sent are stored`, { timeout: scale(120_000, 1_800_000) }, async (t) => {
  t.diagnostic(`seed ${SEED} (P_E_RELAY_FUZZ_SEED=${SEED} replays this run)`);
  const g = new Gen(mulberry32(SEED));
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'fuzzer');
  const key = (await readKey(keys, 'fuzzer'))!;
  const big = 1_000_000;
  const [hub, stdio] = await Promise.all([
    hubProcess(t, corpus, keys, { tuned: { limits: { appendsPerSecond: big, appendBurst: big, waitsPerAgent: big, waits: big } }, env: { P_E_RELAY_LOG: 'warn' } }),
    rawStdio(t, corpus),
  ]);
  const sentRecords = new Set<string>();
  const statuses = new Map<string, number>();
  const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1);
  let signatureSecond = 0;

  // Every input is drawn before any is sent, so a seed replays the same inputs however the answers interleave.
  const httpCases = Array.from({ length: INPUTS * 2 }, (_, i) => {
    const toMcp = i % 2 === 0;
    const text = toMcp ? jsonRpcInput(g, i) : g.record();
    const headers: Record<string, string> = {};
    const signed = g.chance(0.85); // mostly signed over the exact bytes sent, sometimes not at all
    if (toMcp) {
      headers['Content-Type'] = g.chance(0.9) ? 'application/json' : g.pick(['text/plain', 'application/json; charset=latin1', '']);
      headers.Accept = g.chance(0.9) ? 'application/json, text/event-stream' : g.pick(['application/json', '*/*', 'text/event-stream']);
    } else if (g.chance(0.5)) headers.Accept = 'application/json';
    const query = !toMcp && g.chance(0.2) ? `?id=${[...Buffer.from(String(g.json()))].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')}` : '';
    return { toMcp, text, signed, headers, query };
  });
  const stdioLines = Array.from({ length: Math.ceil(INPUTS / 10) }, (_, b) =>
    Array.from({ length: 10 }, (_, k) => {
      const picked = g.chance(0.1) ? g.pick(['', '   ', 'not json', '{"jsonrpc":"2.0"', '[]', '{}', 'null', '"\\ud800"', JSON.stringify({ jsonrpc: '2.0', id: null, method: 'ping' })]) : jsonRpcInput(g, 1_000_000 + b * 10 + k);
      return picked.replace(/\n/g, ' '); // one input, one line
    }),
  );

  // POST /mcp and POST /relays: four requests in flight at a time.
  const httpInputs = httpCases.map(({ toMcp, text, signed, headers, query }, i) => async () => {
    const body = Buffer.from(text, 'utf8');
    if (toMcp) recordsIn(text, sentRecords);
    else sentRecords.add(digestOf(body));
    // Signed as it is sent (a fresh second now and then, so no two collide).
    if (signed) headers.Authorization = authorizationFor('fuzzer', key, 'POST', body, Date.now() - (signatureSecond++ % 50) * 1000);
    const answer = await post(hub.port, toMcp ? '/mcp' : `/relays${query}`, body, headers);
    const where = `${toMcp ? 'POST /mcp' : 'POST /relays'} #${i} (${answer.status}) ${text.slice(0, 120)} → ${answer.text.slice(0, 200)}`;
    count(`${toMcp ? 'mcp' : 'relays'} ${answer.status}`);
    if (answer.status === 202) return assert.equal(answer.text, '', where); // notifications only
    if (answer.type.startsWith('text/event-stream')) {
      for (const line of answer.text.split('\n')) if (line.startsWith('data: ')) assertJsonRpcMessage(JSON.parse(line.slice(6)), where);
      return;
    }
    if (!toMcp && answer.status === 201) return assert.match(answer.text, /relay-\d{4}/, where);
    const parsed = JSON.parse(answer.text) as unknown;
    if (typeof (parsed as { error?: unknown }).error === 'string') return assertRefusal(answer.status, parsed, where);
    assert.ok(toMcp, where);
    for (const m of Array.isArray(parsed) ? parsed : [parsed]) assertJsonRpcMessage(m, where);
  });

  // stdio: lines in batches of ten, then a ping that must be answered.
  const stdioBatches = stdioLines.map((lines) => async () => {
    for (const line of lines) {
      recordsIn(line, sentRecords);
      stdio.sendLine(line);
    }
    const pong = await stdio.request('ping', undefined, HANG_MS);
    assert.deepEqual(pong.result, {}, 'the stdio server still answers');
  });

  await Promise.all([pool(4, httpInputs), pool(1, stdioBatches)]);

  // Whatever the stdio server wrote was JSON-RPC, and each answer well-formed.
  assert.deepEqual(stdio.garbage, [], 'stdout carries nothing but JSON-RPC');
  for (const m of stdio.unsolicited) assertJsonRpcMessage(m as RawAnswer, `stdio: ${JSON.stringify(m).slice(0, 200)}`);
  assert.ok(stdio.alive(), 'the stdio server is alive');
  assert.equal(hub.child.exitCode, null, 'the hub is alive');
  assert.equal((await post(hub.port, '/mcp', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}'), { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' })).status, 200);

  // Only whole records, each exactly the bytes of an append that was sent.
  const report = await verifyCorpus(corpus);
  assert.deepEqual(report.damaged, []);
  assert.deepEqual([...report.stray, ...report.live], []);
  const ids = (await readdir(corpus)).filter((n) => shape.parseRecordId(n) !== null);
  for (const id of ids) {
    const split = splitRecordFile(await readFile(path.join(corpus, id)));
    assert.ok(sentRecords.has(split.deposit.digest), `${id} holds bytes that no append sent`);
  }
  t.diagnostic(`inputs: ${INPUTS * 2} over HTTP, ${INPUTS} over stdio; records stored: ${ids.length}, all whole and as sent; damaged 0; spliced waits shortened: ${unhiddenWaits}; answers: ${[...statuses].sort().map(([k, v]) => `${k}×${v}`).join(', ')}`);
});

test('stdio: a record as large as the server is configured to take, in its longest JSON form, is read; a longer line ends the session with a log line, not silently', { timeout: 60_000 }, async (t) => {
  const { corpus } = await tempStore(t);
  // 2 MiB of U+0001 is a valid record, and JSON.stringify writes each one as six characters: a 12 MiB line.
  const limit = 3 * 1024 * 1024;
  const server = await rawStdio(t, corpus, { P_E_RELAY_LOG: 'warn' }, ['--max-record-bytes', String(limit)]);
  const bytes = `@p-e/x0\nkind: wide\n\n${'\u0001'.repeat(2 * 1024 * 1024)}`;
  const answer = await server.request('tools/call', { name: 'append_relay', arguments: { bytes } }, 30_000);
  assert.equal((answer.result?.structuredContent as { id?: string } | undefined)?.id, 'relay-0001', JSON.stringify(answer).slice(0, 300));
  assert.equal(digestOf(splitRecordFile(await readFile(path.join(corpus, 'relay-0001'))).record), digestOf(Buffer.from(bytes)));

  // Beyond any record this server takes: the SDK drops the session; the operator is told why.
  server.sendLine(`{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"${'\\u0001'.repeat(limit + 1024 * 1024)}"}}`);
  await new Promise<void>((resolve) => server.child.once('exit', () => resolve()));
  assert.match(server.stderr(), /p-e-relay warn: .*exceeded maximum size/);
});
