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

// Over HTTP a record meets the hub's record cap before the store's limit, so the hub's listing states the cap it runs with; stdio's has none.
test('the hub\'s append_relay states the record cap it runs with, beside the store\'s record limit', async (t) => {
  const h = await startTestHub(t, { recordCap: 32_768 });
  const client = await httpClient(t, h.url, { agent: 'scout-7', key: await h.key('scout-7') });
  const append = (await client.listTools()).tools.find((x) => x.name === 'append_relay')!;
  const bytes = (append.inputSchema.properties as Record<string, { description: string }>).bytes!.description;
  assert.match(bytes, /and 1,048,576 bytes \(over this hub: 32,768\)$/);
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
