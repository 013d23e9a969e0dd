/**
 * POST /mcp with the real SDK client over real HTTP: every tool, signed
 * where it must be, refused as a tool result where it is not, and the
 * stateless endpoint's 405s.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SdkHttpError } from '@modelcontextprotocol/client';
import { errorCode, record, textOf } from '../support/helpers.js';
import { httpClient, sign, startTestHub } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';

test('every tool answers over HTTP for a client that signs', async (t) => {
  const h = await startTestHub(t);
  const client = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay']);

  const first = await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'task', from: 'scout-7' }, 'first') } });
  assert.equal(first.isError, undefined, textOf(first));
  assert.deepEqual({ id: (first.structuredContent as { id: string }).id, by: (first.structuredContent as { depositedBy: string }).depositedBy }, { id: 'relay-0001', by: 'mcp/scout-7' });
  const reply = await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'reply', parent: 'relay-0001', ref: 'relay-0009' }, 'second') } });
  assert.equal((reply.structuredContent as { id: string }).id, 'relay-0002');

  assert.equal(textOf(await client.callTool({ name: 'exists', arguments: { id: 'relay-0009' } })), 'relay-0009 KNOWN_MISSING');
  assert.match(textOf(await client.callTool({ name: 'get_relay', arguments: { id: 'relay-0001' } })), /^provenance: as-received\ndeposited-by: mcp\/scout-7\n[\s\S]*---\n@p-e\/x0\n[\s\S]*first$/);
  assert.equal(textOf(await client.callTool({ name: 'list_relays', arguments: {} })), 'present (2): relay-0001 relay-0002\nknown missing (1): relay-0009');
  const replies = await client.callTool({ name: 'list_replies', arguments: { id: 'relay-0001' } });
  assert.deepEqual((replies.structuredContent as { replies: { id: string }[] }).replies.map((r) => r.id), ['relay-0002']);
  const waited = await client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0001', timeout_ms: 1000 } });
  assert.deepEqual((waited.structuredContent as { appeared: { id: string; depositedBy: string }[] }).appeared.map((r) => [r.id, r.depositedBy]), [['relay-0002', 'mcp/scout-7']]);
  assert.match(await (await fetch(`${h.url}/metrics`)).text(), /^p_e_relay_appends_total\{door="mcp"\} 2$/m);
});

// Over HTTP a record meets the hub's record cap before the store's limit; the listing, the same on every door, leaves the figure to too_large's sentence.
test('the hub refuses a record one byte over its record cap as too_large, naming the cap', async (t) => {
  const h = await startTestHub(t, { recordCap: 32_768 });
  const client = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const fits = record({}, 'x'.repeat(32_768 - record({}, '').length));
  assert.equal((await client.callTool({ name: 'append_relay', arguments: { bytes: fits } })).isError, undefined);
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes: fits + 'x' } });
  assert.equal(errorCode(result), 'too_large');
  assert.match(textOf(result), /32768/);
});

type Item = { id: string; unproven?: true; answers?: number; answeredBy?: string[] };
type Waited = { appeared: Item[]; agents?: { name: string }[] };
const waited = (result: unknown) => (result as { structuredContent: Waited }).structuredContent;

// The listing every door gives says a wait without after is the agent's inbox, each record once; the hub does exactly that for a signed caller.
test('the hub\'s listing says what a signed wait without after does: it goes on from the agent\'s place, each record once', async (t) => {
  const h = await startTestHub(t, { agents: ['scout-7', 'critic-2'] });
  const scout = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const critic = await httpClient(t, h.url, { agent: 'critic-2', key: await h.key('critic-2') });
  const wait = (await scout.listTools()).tools.find((x) => x.name === 'wait_for_relay')!;
  assert.match(wait.description!, /call it with no arguments.*\nIt gives what is to you or all, not from you, that you have not had, oldest first, once each/);
  // Left out, each reads as MCP's default: false.
  assert.equal(wait.annotations?.readOnlyHint ?? false, false, 'it moves the agent\'s place');
  assert.equal(wait.annotations?.idempotentHint ?? false, false);

  const to = (body: string) => ({ bytes: record({ kind: 'note', from: 'critic-2', to: 'scout-7' }, body) });
  for (const body of ['one', 'two']) await critic.callTool({ name: 'append_relay', arguments: to(body) });
  const first = await scout.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 5000 } });
  assert.deepEqual(waited(first).appeared.map((i) => i.id), ['relay-0001', 'relay-0002']);
  assert.doesNotMatch(textOf(first), /pass it as after/, 'no cursor to carry');
  assert.deepEqual(waited(first).agents?.map((a) => a.name), ['critic-2'], 'the roster, on the first answer');
  assert.deepEqual(waited(await scout.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } })).appeared, [], 'each record once');
  await critic.callTool({ name: 'append_relay', arguments: to('three') });
  assert.deepEqual(waited(await scout.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 5000 } })).appeared.map((i) => i.id), ['relay-0003']);
});

test('a signed append resent with the same bytes and no key is stored once: the hub keys it by its bytes', async (t) => {
  const h = await startTestHub(t);
  const client = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const bytes = record({ kind: 'note', from: 'scout-7' }, 'sent twice');
  const first = (await client.callTool({ name: 'append_relay', arguments: { bytes } })).structuredContent as { id: string; replayed?: true };
  const again = (await client.callTool({ name: 'append_relay', arguments: { bytes } })).structuredContent as { id: string; replayed?: true };
  assert.deepEqual([first.id, first.replayed, again.id, again.replayed], ['relay-0001', undefined, 'relay-0001', true]);
});

test('a wait item whose sender no key proves says so, in its structure and its text; a signed one does not', async (t) => {
  const h = await startTestHub(t, { agents: ['scout-7', 'critic-2'] });
  const scout = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const critic = await httpClient(t, h.url, { agent: 'critic-2', key: await h.key('critic-2') });
  await h.store.append(Buffer.from(record({ kind: 'note', from: 'critic-2', to: 'scout-7' }, 'from the command line')), { depositedBy: 'cli/someone' });
  await critic.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'critic-2', to: 'scout-7' }, 'signed') } });
  const result = await scout.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 5000 } });
  assert.deepEqual(waited(result).appeared.map((i) => [i.id, i.unproven ?? false]), [['relay-0001', true], ['relay-0002', false]]);
  assert.match(textOf(result), /^relay-0001 .*deposited-by cli\/someone, as-received, sender unproven$/m);
  assert.match(textOf(result), /^relay-0002 .*deposited-by mcp\/critic-2, as-received$/m);
});

test('a broadcast question\'s wait item names who has answered it already', async (t) => {
  const h = await startTestHub(t, { agents: ['scout-7', 'critic-2', 'ana'] });
  const as = async (agent: string) => httpClient(t, h.url, { agent, key: await h.key(agent) });
  const [scout, critic, ana] = [await as('scout-7'), await as('critic-2'), await as('ana')];
  await ana.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } }); // here before the broadcast: it is ana's too
  await critic.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'question', from: 'critic-2', to: 'all' }, 'who knows?') } });
  await scout.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'answer', from: 'scout-7', to: 'critic-2', parent: 'relay-0001' }, 'part of it') } });
  const result = await ana.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 5000 } });
  const question = waited(result).appeared.find((i) => i.id === 'relay-0001')!;
  assert.deepEqual([question.answers, question.answeredBy], [1, ['scout-7']]);
  assert.match(textOf(result), /^relay-0001 .*1 answer held \(by scout-7\)$/m);
});

test('reads need no signature over HTTP', async (t) => {
  const h = await startTestHub(t);
  await h.store.append(Buffer.from(record()), { depositedBy: 'cli/test' });
  const client = await httpClient(t, h.url);
  assert.equal(textOf(await client.callTool({ name: 'exists', arguments: { id: 'relay-0001' } })), 'relay-0001 PRESENT');
  assert.equal((await client.callTool({ name: 'get_relay', arguments: { id: 'relay-0001' } })).isError, undefined);
  assert.equal((await client.callTool({ name: 'list_relays', arguments: {} })).isError, undefined);
  assert.equal((await client.callTool({ name: 'list_replies', arguments: { id: 'relay-0001' } })).isError, undefined);
});

test('an unsigned append is refused as a tool result that names the header to send', async (t) => {
  const h = await startTestHub(t);
  const client = await httpClient(t, h.url);
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes: record() } });
  assert.equal(result.isError, true);
  assert.equal(errorCode(result), 'unsigned');
  assert.match(textOf(result), /Authorization: PE-HMAC agent=/);
  assert.equal(h.store.size, 0);
  assert.match(await (await fetch(`${h.url}/metrics`)).text(), /^p_e_relay_refusals_total\{code="unsigned"\} 1$/m, 'tool refusals are counted by code');
});

test('arguments the input schema refuses are counted as invalid_arguments, once', async (t) => {
  const h = await startTestHub(t);
  const client = await httpClient(t, h.url);
  const result = await client.callTool({ name: 'exists', arguments: { id: 33 } });
  assert.equal(result.isError, true);
  assert.match(await (await fetch(`${h.url}/metrics`)).text(), /^p_e_relay_refusals_total\{code="invalid_arguments"\} 1$/m);
});

test('an unsigned wait is refused as a tool result, without blocking', async (t) => {
  const h = await startTestHub(t);
  const client = await httpClient(t, h.url);
  const result = await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 60_000 } });
  assert.equal(errorCode(result), 'unsigned');
  assert.match(textOf(result), /Authorization/);
});

test('a wrong credential on /mcp is a 401 before anything runs', async (t) => {
  const h = await startTestHub(t, { agents: ['scout-7', 'other'] });
  // Signing with another agent's key under scout-7's name: a bad signature.
  const client = httpClient(t, h.url, { agent: 'scout-7', key: await h.key('other') });
  await assert.rejects(client, (err: unknown) => err instanceof SdkHttpError && err.status === 401 && /bad_signature/.test(err.message));
});

test('a signed append lands as deposited-by mcp/<agent> and a signed wait wakes on it', async (t) => {
  const h = await startTestHub(t, { agents: ['writer', 'reader'] });
  const reader = await httpClient(t, h.url, { agent: 'reader', key: await h.key('reader') });
  const writer = await httpClient(t, h.url, { agent: 'writer', key: await h.key('writer') });
  const waiting = reader.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 10_000 } });
  await eventually(() => h.hub.context.gate.waits.active === 1, 'the wait to be held');
  await writer.callTool({ name: 'append_relay', arguments: { bytes: record({ from: 'writer', to: 'reader' }) } });
  const result = await waiting;
  assert.deepEqual((result.structuredContent as { appeared: { depositedBy: string }[] }).appeared.map((r) => r.depositedBy), ['mcp/writer']);
  assert.equal(h.hub.context.gate.waits.active, 0);
});

for (const method of ['GET', 'DELETE']) {
  test(`${method} /mcp answers 405 with Allow: POST and a JSON-RPC error`, async (t) => {
    const h = await startTestHub(t);
    const response = await fetch(`${h.url}/mcp`, { method, headers: { Accept: 'application/json, text/event-stream' } });
    assert.equal(response.status, 405);
    assert.equal(response.headers.get('allow'), 'POST');
    const body = (await response.json()) as { jsonrpc: string; error: { code: number; message: string }; id: null };
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(typeof body.error.code, 'number');
    assert.equal(body.id, null);
  });
}

test('a body that is not JSON is a JSON-RPC parse error', async (t) => {
  const h = await startTestHub(t);
  const response = await fetch(`${h.url}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: '{not json' });
  assert.equal(response.status, 400);
  assert.equal(((await response.json()) as { error: { code: number } }).error.code, -32700);
});

test('the endpoint is stateless: no session id, and calls work without initialize', async (t) => {
  const h = await startTestHub(t);
  const response = await fetch(`${h.url}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'exists', arguments: { id: 'relay-0001' } } }),
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('mcp-session-id'), null);
  assert.match(response.headers.get('content-type') ?? '', /application\/json/);
  const body = (await response.json()) as { id: number; result: { structuredContent: { state: string } } };
  assert.deepEqual([body.id, body.result.structuredContent.state], [7, 'UNKNOWN']);
});

test('a wait that carries a progress token is answered as an event stream; others as JSON', async (t) => {
  const h = await startTestHub(t);
  await h.store.append(Buffer.from(record()), { depositedBy: 'cli/test' });
  const key = await h.key('scout-7');
  const call = async (meta: Record<string, unknown>) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'wait_for_relay', arguments: { after: 'relay-0000' }, _meta: meta } });
    const response = await fetch(`${h.url}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: sign('scout-7', key, 'POST', body) }, body });
    return { type: response.headers.get('content-type') ?? '', text: await response.text() };
  };
  const streamed = await call({ progressToken: 'p1' });
  assert.match(streamed.type, /^text\/event-stream/);
  assert.match(streamed.text, /event: message\ndata: \{.*"relay-0001"/);
  const plain = await call({});
  assert.match(plain.type, /^application\/json/);
  assert.match(plain.text, /"relay-0001"/);
});
