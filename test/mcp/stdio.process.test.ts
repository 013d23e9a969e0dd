import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { test, type TestContext } from 'node:test';
import { Client, ReadBuffer, serializeMessage, type CallToolResult, type JSONRPCMessage, type Progress, type Transport } from '@modelcontextprotocol/client';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { corpusPaths } from '../../lib/disk/paths.js';
import { BIN, errorCode, record, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { refused } from '../support/refusal.js';
import type { ErrorCode } from '../../lib/errors.js';
import { said } from '../support/poll.js';

test('tools/list names the six tools, each with annotations', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay']);
  for (const tool of tools) {
    assert.ok(tool.annotations, `${tool.name} has annotations`);
    // readOnlyHint is listed where it is true; left out, it reads as MCP's default, false.
    assert.equal(tool.annotations.readOnlyHint ?? false, !['append_relay', 'wait_for_relay'].includes(tool.name), tool.name);
    if (tool.name !== 'get_relay') assert.ok(tool.outputSchema, `${tool.name} has an output schema`);
  }
});

test('append_relay stores a record deposited by mcp and answers what it did', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: 'a' }) } });
  assert.equal(result.isError, undefined);
  const s = result.structuredContent as Record<string, string>;
  assert.equal(s.id, 'relay-0001');
  assert.equal(s.depositedBy, 'mcp');
  assert.equal(s.provenance, 'as-received');
  assert.match(s.digest!, /^sha256:[0-9a-f]{64}$/);
  assert.match(textOf(result), /relay-0001/);
});

test('a refusal is an isError result with a code, not a protocol error', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes: 'no first line' } });
  assert.equal(result.isError, true);
  assert.equal(errorCode(result), 'bad_record');
  assert.equal(result.structuredContent, undefined);
  assert.match(textOf(result), /@p-e\/x0/);
});

// Many hosts show a model the content text and nothing of _meta; the tool descriptions say what to do by code.
test('a refusal\'s text leads with its code, and the sentence says the figure its _meta field carries', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const result = (await client.callTool({ name: 'append_relay', arguments: { id: 'relay-0040', bytes: record() } })) as CallToolResult;
  assert.equal(errorCode(result), 'id_ahead');
  assert.match(textOf(result), /^id_ahead: relay-0040 is beyond the next free id \(relay-0001\)/);
  assert.equal((result._meta?.['p-e-relay/error'] as { nextFree?: string }).nextFree, 'relay-0001');
});

// ---- every tool, every state, every refusal ------------------------------------------

/** A client that has listed the tools, so the SDK validates every structuredContent against its output schema. */
async function connect(t: TestContext, corpus: string, extraArgs: string[] = []): Promise<Client> {
  const { client } = await stdioClient(t, corpus, extraArgs);
  await client.listTools();
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function structured<T = Record<string, unknown>>(result: CallToolResult): T {
  assert.notEqual(result.isError, true, textOf(result));
  return result.structuredContent as T;
}

/** Appends a record over MCP and returns its id. */
async function put(client: Client, headers: Record<string, string> = {}, body = 'hello', id?: string): Promise<string> {
  return structured<{ id: string }>(await call(client, 'append_relay', { bytes: record(headers, body), ...(id ? { id } : {}) })).id;
}

test('wait_for_relay with timeout_ms 0 only looks: an empty answer says nothing new, not timed out, for an agent and for a cursor', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, ['--agent', 'ana']);
  const own = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } })) as CallToolResult;
  assert.equal(textOf(own).split('\n')[0], 'nothing new (looked without waiting)');
  const history = (await client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 0 } })) as CallToolResult;
  assert.equal(textOf(history), 'nothing new (looked without waiting)\ncursor: relay-0000 (to read on from there, pass it as after)');
  assert.equal((history.structuredContent as { timedOut: boolean }).timedOut, true, 'the field keeps its meaning: the time given is over');
  const waited = (await client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 50 } })) as CallToolResult;
  assert.match(textOf(waited), /^nothing appeared in \d+ ms \(timed out\)$/m);
});

test('exists answers one line and {id, state} for PRESENT, KNOWN_MISSING and UNKNOWN', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client, { parent: 'relay-0033' });
  for (const [id, state] of [['relay-0001', 'PRESENT'], ['relay-0033', 'KNOWN_MISSING'], ['relay-0002', 'UNKNOWN']]) {
    const result = await call(client, 'exists', { id });
    assert.equal(textOf(result), `${id} ${state}`);
    assert.deepEqual(structured(result), { id, state });
  }
});

test('exists: a malformed id is simply UNKNOWN, never an error', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client);
  for (const id of ['relay-1', 'RELAY-0001', 'relay-0001 ', '../x', 'relay-0000', '']) {
    const result = await call(client, 'exists', { id });
    assert.deepEqual(structured(result), { id, state: 'UNKNOWN' });
    assert.equal(textOf(result), `${id} UNKNOWN`);
  }
});

test('get_relay answers the exact bytes of the file on disk', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const id = await put(client, { kind: 'note', from: 'Zoë' }, 'line one\r\n---\nnaïve 🦊 body');
  const result = await call(client, 'get_relay', { id });
  assert.equal(result.isError, undefined);
  assert.equal(result.structuredContent, undefined);
  assert.deepEqual(Buffer.from(textOf(result), 'utf8'), await readFile(corpusPaths(corpus).record(id)));
});

test('get_relay refuses an absent id with not_found, naming its state', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client, { parent: 'relay-0009' });
  for (const [id, state] of [['relay-0009', 'KNOWN_MISSING'], ['relay-0002', 'UNKNOWN'], ['relay-2', 'UNKNOWN'], ['../x', 'UNKNOWN'], ['RELAY-0001', 'UNKNOWN']]) {
    const result = await call(client, 'get_relay', { id });
    const meta = refused(result, 'not_found').details;
    assert.equal(meta.state, state);
    assert.ok(textOf(result).includes(state!), textOf(result));
  }
});

test('get_relay refuses a record whose bytes no longer match as damaged; exists still says PRESENT', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const id = await put(client, {}, 'original');
  const file = corpusPaths(corpus).record(id);
  // Edited the way an editor saves: a new file renamed over the old name.
  await writeFile(`${file}.edit`, (await readFile(file, 'utf8')).replace('original', 'tampered'));
  await rename(`${file}.edit`, file);
  const meta = refused(await call(client, 'get_relay', { id }), 'damaged').details;
  assert.equal(meta.state, 'PRESENT');
  assert.deepEqual(structured(await call(client, 'exists', { id })), { id, state: 'PRESENT' });
});

test('list_relays answers exactly two lines, and {after, present, knownMissing}', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const empty = await call(client, 'list_relays');
  assert.equal(textOf(empty), 'present (0):\nknown missing (0):');
  // No after: left out of the answer, not null (no output schema types a property ["string","null"]).
  assert.deepEqual(structured(empty), { present: [], knownMissing: [] });
  await put(client, { ref: 'relay-0003, relay-0005' }); // 1
  await put(client); // 2: citing an id reserves nothing (spec §8c)
  const all = await call(client, 'list_relays');
  assert.equal(textOf(all), 'present (2): relay-0001 relay-0002\nknown missing (2): relay-0003 relay-0005');
  assert.deepEqual(structured(all), { present: ['relay-0001', 'relay-0002'], knownMissing: ['relay-0003', 'relay-0005'] });
  const fromStart = await call(client, 'list_relays', { after: 'relay-0000' });
  assert.deepEqual(structured(fromStart), { after: 'relay-0000', present: ['relay-0001', 'relay-0002'], knownMissing: ['relay-0003', 'relay-0005'] });
  const after = await call(client, 'list_relays', { after: 'relay-0001' });
  assert.equal(textOf(after), 'present (1): relay-0002\nknown missing (2): relay-0003 relay-0005');
  const beyond = await call(client, 'list_relays', { after: 'relay-0003' });
  assert.equal(textOf(beyond), 'present (0):\nknown missing (1): relay-0005');
});

test('list_relays and wait_for_relay refuse a malformed after', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  for (const after of ['relay-1', 'RELAY-0001', 'relay-0001 ', '../x', '']) {
    for (const tool of ['list_relays', 'wait_for_relay']) {
      const result = await call(client, tool, { after, timeout_ms: 10 });
      refused(result, 'bad_id');
      assert.ok(textOf(result).includes('relay-0000'), 'the sentence says what to send instead');
    }
  }
});

test('list_replies lists the records naming an id, one level, in id order, each with its parent and refs', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client, { kind: 'question' }); // 1
  await put(client, { kind: 'note', ref: 'relay-0001' }); // 2
  await put(client, { kind: 'reply', from: 'b', to: 'a', parent: 'relay-0001' }); // 3
  await put(client, { kind: 'reply', parent: 'relay-0003' }); // 4: one level only
  const result = await call(client, 'list_replies', { id: 'relay-0001' });
  const { parent, replies } = structured(result) as { parent: string; replies: { depositedAt: string }[] };
  assert.equal(parent, 'relay-0001');
  // A wait item's fields: the deposit ones too (depositedAt is the store's clock).
  assert.deepEqual(replies.map(({ depositedAt, ...rest }) => rest), [
    { id: 'relay-0002', kind: 'note', refs: ['relay-0001'], depositedBy: 'mcp', provenance: 'as-received' },
    { id: 'relay-0003', kind: 'reply', from: 'b', to: 'a', parent: 'relay-0001', refs: [], depositedBy: 'mcp', provenance: 'as-received' },
  ]);
  // The text says the same: a citation (refs) is told from an answer (parent).
  assert.equal(textOf(result), 'replies to relay-0001 (2):\nrelay-0002 (kind note, refs relay-0001) deposited-by mcp\nrelay-0003 (kind reply, from b, to a, parent relay-0001) deposited-by mcp');
});

test('list_replies: a malformed id is UNKNOWN and has no replies', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client, { parent: 'relay-0001' });
  for (const id of ['relay-1', '../x', 'relay-0001 ']) {
    assert.deepEqual(structured(await call(client, 'list_replies', { id })), { parent: id, replies: [] });
  }
});

test('append_relay refuses a malformed id with bad_id, showing the expected shape', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  for (const id of ['relay-33', 'RELAY-0033', 'relay-0033 ', '../x', 'relay-0000']) {
    const result = await call(client, 'append_relay', { id, bytes: record() });
    refused(result, 'bad_id');
    assert.ok(textOf(result).includes('relay-0033'), textOf(result));
  }
  assert.equal(textOf(await call(client, 'list_relays')), 'present (0):\nknown missing (0):');
});

test('append_relay refuses a held id, saying in _meta whether the bytes are identical', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client, { kind: 'note' }, 'first');
  const same = refused(await call(client, 'append_relay', { id: 'relay-0001', bytes: record({ kind: 'note' }, 'first') }), 'id_held').details;
  assert.deepEqual([same.id, same.identical], ['relay-0001', true]);
  const different = refused(await call(client, 'append_relay', { id: 'relay-0001', bytes: record({ kind: 'note' }, 'second') }), 'id_held').details;
  assert.deepEqual([different.identical], [false]);
});

test('append_relay refuses an id ahead of the next free one, naming it, even one a record cites (spec §8c); takes the next free id', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client, { parent: 'relay-0040' });
  const result = await call(client, 'append_relay', { id: 'relay-0009', bytes: record() });
  const meta = refused(result, 'id_ahead').details;
  assert.equal(meta.nextFree, 'relay-0002');
  assert.ok(textOf(result).includes('relay-0002'));
  refused(await call(client, 'append_relay', { id: 'relay-0040', bytes: record() }), 'id_ahead');
  assert.equal(await put(client, {}, 'the next free', 'relay-0002'), 'relay-0002');
});

test('append_relay refuses bad records: no first line, NUL, a lone surrogate, too large, too many refs', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus, ['--max-record-bytes', '100']);
  const cases: [string, ErrorCode][] = [
    ['kind: note\n\nno first line', 'bad_record'],
    ['@p-e/x0\n\nnul\0byte', 'bad_record'],
    ['@p-e/x0\n\nlone \uD800 surrogate', 'bad_record'],
    [`@p-e/x0\n\n${'x'.repeat(100)}`, 'too_large'],
  ];
  for (const [bytes, code] of cases) refused(await call(client, 'append_relay', { bytes }), code);
  assert.deepEqual(await readdir(corpusPaths(corpus).tmp), []);
  assert.equal(textOf(await call(client, 'list_relays')), 'present (0):\nknown missing (0):');
});

test('append_relay refuses a record naming more than 64 ids', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const ids = Array.from({ length: 65 }, (_, i) => `relay-${String(i + 100).padStart(4, '0')}`).join(' ');
  refused(await call(client, 'append_relay', { bytes: record({ ref: ids }) }), 'too_many_refs');
});

test('append_relay stores the bytes exactly as sent, CRLF included', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const bytes = '@p-e/x0\r\nkind: note\r\n\r\nbody\r\n';
  const id = structured<{ id: string }>(await call(client, 'append_relay', { bytes })).id;
  const file = await readFile(corpusPaths(corpus).record(id));
  assert.ok(file.toString().endsWith(`---\n${bytes}`));
});

test('wait_for_relay with after returns at once with the held records after it', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  await put(client, { kind: 'a' });
  await put(client, { kind: 'b', from: 'x', to: 'y' });
  const result = structured<{ appeared: unknown[]; timedOut: boolean }>(await call(client, 'wait_for_relay', { after: 'relay-0001', timeout_ms: 60_000 }));
  assert.equal(result.appeared.length, 1);
  const { depositedAt, bytes, digest, ...item } = result.appeared[0] as { depositedAt: string; bytes: string; digest: string } & Record<string, unknown>;
  // Over stdio no key proves who sent it: the item says so.
  assert.deepEqual(item, { id: 'relay-0002', kind: 'b', from: 'x', to: 'y', refs: [], depositedBy: 'mcp', provenance: 'as-received', unproven: true });
  assert.match(bytes, /^@p-e\/x0\nkind: b\n/, 'its bytes come with it unless the call says no');
  assert.match(digest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(new Date(depositedAt).toISOString(), depositedAt);
  assert.equal(result.timedOut, false);
});

test('wait_for_relay without after blocks until a record for the agent lands, then answers it', async (t) => {
  const { corpus } = await tempStore(t);
  const waiter = await connect(t, corpus, ['--agent', 'ana']);
  const writer = await connect(t, corpus);
  await call(waiter, 'wait_for_relay', { timeout_ms: 0 }); // nothing held yet: its place starts here
  const pending = call(waiter, 'wait_for_relay', { timeout_ms: 20_000 });
  await call(waiter, 'exists', { id: 'relay-0001' }); // the server has started the wait
  const id = await put(writer, { kind: 'answer', to: 'ana' });
  const result = structured<{ appeared: { id: string; kind: string }[]; timedOut: boolean }>(await pending);
  assert.deepEqual(result.appeared.map((r) => [r.id, r.kind]), [[id, 'answer']]);
  assert.equal(result.timedOut, false);
});

test('a server with no agent name refuses wait_for_relay without after as agent_required, saying how to get one, and answers it with after', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const id = await put(client, { to: 'ana' });
  const result = await call(client, 'wait_for_relay', { timeout_ms: 0 });
  refused(result, 'agent_required');
  assert.match(textOf(result), /serve --agent NAME/);
  assert.match(textOf(result), /P_E_RELAY_AGENT=NAME/);
  assert.match(textOf(result), /pass after/);
  assert.deepEqual(structured<{ appeared: { id: string }[] }>(await call(client, 'wait_for_relay', { after: 'relay-0000', timeout_ms: 0 })).appeared.map((a) => a.id), [id]);
});

test('wait_for_relay times out with {appeared: [], timedOut: true}', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const result = structured<{ appeared: unknown[]; timedOut: boolean; waitedMs: number }>(await call(client, 'wait_for_relay', { after: 'relay-0000', timeout_ms: 100 }));
  assert.deepEqual(result.appeared, []);
  assert.equal(result.timedOut, true);
  assert.ok(result.waitedMs >= 90);
});

test('structuredContent of every tool matches its output schema', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const { tools } = await client.listTools();
  const validator = new AjvJsonSchemaValidator();
  const schemas = new Map(tools.map((tool) => [tool.name, tool.outputSchema]));
  const calls: [string, Record<string, unknown>][] = [
    ['append_relay', { bytes: record({ kind: 'note', parent: 'relay-0007' }) }],
    ['exists', { id: 'relay-0001' }],
    ['exists', { id: 'relay-0007' }],
    ['list_relays', {}],
    ['list_relays', { after: 'relay-0000' }],
    ['list_replies', { id: 'relay-0007' }],
    ['wait_for_relay', { after: 'relay-0000' }],
    ['wait_for_relay', { after: 'relay-0000', timeout_ms: 1, include_bytes: false }],
  ];
  for (const [name, args] of calls) {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const check = validator.getValidator(schemas.get(name) as never)(result.structuredContent);
    assert.ok(check.valid, `${name}: ${check.errorMessage}`);
  }
  assert.equal(schemas.get('get_relay'), undefined, 'get_relay answers bytes as text, with no output schema');
});

test('a store of width 6 shows its width by example in every id schema, and uses it', async (t) => {
  const { corpus } = await tempStore(t, { idWidth: 6 });
  const client = await connect(t, corpus);
  const { tools } = await client.listTools();
  // Every id schema shows the width by its example (spec §3).
  for (const name of ['append_relay', 'exists', 'get_relay', 'list_replies', 'list_relays']) {
    const tool = tools.find((x) => x.name === name)!;
    assert.match(JSON.stringify(tool.inputSchema), /e\.g\. relay-000033/, name);
  }
  assert.match(tools.find((x) => x.name === 'wait_for_relay')!.description!, /e\.g\. relay-000000/);
  assert.equal(await put(client), 'relay-000001');
  assert.deepEqual(structured(await call(client, 'exists', { id: 'relay-0001' })), { id: 'relay-0001', state: 'UNKNOWN' });
  refused(await call(client, 'append_relay', { id: 'relay-0002', bytes: record() }), 'bad_id');
});

// The size limit is the one the store enforces as it runs (--max-record-bytes): the listing, the same on every door, leaves it to too_large's sentence.
test('a store served with --max-record-bytes refuses one byte more as too_large, naming the limit', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus, ['--max-record-bytes', '2048']);
  const fits = record({}, 'x'.repeat(2048 - record({}, '').length));
  assert.equal(Buffer.byteLength(fits), 2048);
  assert.notEqual((await call(client, 'append_relay', { bytes: fits })).isError, true);
  const result = await call(client, 'append_relay', { bytes: fits + 'x' });
  refused(result, 'too_large');
  assert.match(textOf(result), /2048/);
});

test('arguments that fail the input schema are refused by the protocol as an isError result', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const result = await call(client, 'wait_for_relay', { timeout_ms: -1 });
  assert.equal(result.isError, true);
  for (const timeout_ms of ['90000', 1.5, null]) {
    const other = await call(client, 'wait_for_relay', { timeout_ms });
    assert.equal(other.isError, true, String(timeout_ms));
    assert.match(textOf(other), /timeout_ms/, String(timeout_ms));
  }
});

test('a timeout_ms above the 90000 cap is capped, not refused', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus);
  const id = await put(client);
  // A held match after the mark answers at once, so the cap itself is not waited out here.
  const result = await call(client, 'wait_for_relay', { after: 'relay-0000', timeout_ms: 10 ** 12 });
  assert.equal(result.isError, undefined);
  assert.deepEqual(structured<{ appeared: { id: string }[] }>(result).appeared.map((a) => a.id), [id]);
});

// ---- long waits: progress and cancellation --------------------------------------------

test('a blocked wait_for_relay sends progress notifications (~every 10 s) when the request has a progress token', async (t) => {
  const { corpus } = await tempStore(t);
  const client = await connect(t, corpus, ['--agent', 'ana']);
  const progress: Progress[] = [];
  const result = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 12_000 } }, { onprogress: (p) => progress.push(p), timeout: 30_000 })) as CallToolResult;
  assert.equal(structured<{ timedOut: boolean }>(result).timedOut, true);
  assert.ok(progress.length >= 1, 'at least one progress notification');
  assert.ok(progress[0]!.progress >= 9_000, `progress reports the time waited (${progress[0]!.progress})`);
});

/**
 * The SDK client over the pipes of a child we spawned ourselves, so the test
 * holds the process: StdioClientTransport hides it, and SIGTERMs it 2 s after
 * closing stdin, which would blur "exited by itself" under load.
 */
class ChildTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly buffer = new ReadBuffer();
  constructor(readonly child: ChildProcess) {}
  async start(): Promise<void> {
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (let message = this.buffer.readMessage(); message; message = this.buffer.readMessage()) this.onmessage?.(message);
    });
    this.child.once('close', () => this.onclose?.());
  }
  async send(message: JSONRPCMessage): Promise<void> {
    this.child.stdin!.write(serializeMessage(message));
  }
  async close(): Promise<void> {
    this.child.stdin!.end();
  }
}

test('cancelling a wait ends it on the server, and the server still answers', async (t) => {
  const { corpus } = await tempStore(t);
  const child = spawn(process.execPath, [BIN, 'serve', '--corpus', corpus, '--agent', 'ana'], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, P_E_RELAY_LOG: 'silent' } });
  t.after(() => child.kill('SIGKILL'));
  const client = new Client({ name: 'p-e-relay-test', version: '0.0.0' });
  await client.connect(new ChildTransport(child));
  const ac = new AbortController();
  const pending = client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 90_000 } }, { signal: ac.signal });
  await client.callTool({ name: 'exists', arguments: { id: 'relay-0001' } }); // the wait has started
  ac.abort();
  await assert.rejects(pending);
  assert.deepEqual(structured(await call(client, 'exists', { id: 'relay-0001' })), { id: 'relay-0001', state: 'UNKNOWN' });
  // No record may land here: it would end an uncancelled wait too. A wait
  // left running holds its 90 s timer, keeping the process alive after its
  // stdin closes; a cancelled one leaves nothing behind.
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdin!.end();
  const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 15_000).unref())]);
  assert.equal(code, 0, 'the server exited by itself once its stdin closed');
});

// ---- the channel ------------------------------------------------------------------------

test('stdout carries nothing but JSON-RPC, even with debug logging', async (t) => {
  const { corpus } = await tempStore(t);
  const child = spawn(process.execPath, [BIN, 'serve', '--corpus', corpus], { env: { ...process.env, P_E_RELAY_LOG: 'debug' }, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill());
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const send = (message: object) => child.stdin.write(JSON.stringify(message) + '\n');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'append_relay', arguments: { bytes: record() } } });
  send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'exists', arguments: { id: '../x' } } });
  const exited = new Promise((resolve) => child.once('close', resolve));
  await said(child.stdout, () => stdout, /"id":4\b/, 'the answer to request 4').catch(() => {});
  child.stdin.end();
  await exited;
  const lines = stdout.split('\n').filter((line) => line !== '');
  assert.ok(lines.length >= 4, stdout);
  for (const line of lines) assert.equal(JSON.parse(line).jsonrpc, '2.0', line);
  assert.deepEqual(lines.map((line) => JSON.parse(line).id).sort(), [1, 2, 3, 4]);
  assert.ok(stdout.endsWith('\n'));
  assert.match(stderr, /p-e-relay debug:/, 'the logs went to stderr');
});
