/**
 * Both protocol eras on every door, spoken by the official v2 SDK client in
 * each of its negotiation modes: `legacy` (the 2025 initialize handshake),
 * `auto` (probes with server/discover, falls back if refused) and pinned to
 * 2026-07-28 (no fallback). Over real stdio to `bin/p-e-relay serve`, real
 * HTTP to a hub on loopback, and real stdio to `bin/p-e-relay bridge` in
 * front of a hub process; every tool, a refusal, an input that fails the
 * schema, and the era each one actually ran in.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test, type TestContext } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BIN, errorCode, record, runCli, tempDir, tempStore, textOf } from '../support/helpers.js';
import { activeWaits, startHubProcess } from '../support/bridge-helpers.js';
import { signingFetch, startTestHub } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';

const MODES = {
  legacy: { mode: 'legacy', era: '2025-11-25' },
  auto: { mode: 'auto', era: '2026-07-28' },
  pinned: { mode: { pin: '2026-07-28' }, era: '2026-07-28' },
} as const;
type ModeName = keyof typeof MODES;

function v2Client(mode: ModeName): Client {
  return new Client({ name: 'p-e-relay-eras-test', version: '0.0.0' }, { versionNegotiation: { mode: MODES[mode].mode } as never });
}

async function stdioV2(t: TestContext, corpus: string, mode: ModeName): Promise<Client> {
  const client = v2Client(mode);
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'serve', '--corpus', corpus], env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' }, stderr: 'pipe' }));
  t.after(() => client.close());
  return client;
}

async function bridgeV2(t: TestContext, url: string, keys: string, mode: ModeName, log = 'warn'): Promise<Client & { stderr(): string }> {
  const client = v2Client(mode);
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'bridge', '--url', url, '--agent', 'scout-7', '--keys', keys], env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: log }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  await client.connect(transport);
  t.after(() => client.close());
  return Object.assign(client, { stderr: () => stderr });
}

async function httpV2(t: TestContext, url: string, mode: ModeName, signer: { agent: string; key: Uint8Array }): Promise<Client> {
  const client = v2Client(mode);
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { fetch: signingFetch(signer.agent, signer.key) }));
  t.after(() => client.close());
  return client;
}

/** Every tool once, a refusal and a schema failure, on a client already connected to an empty store. */
async function everyTool(client: Client, era: string): Promise<void> {
  assert.equal(client.getNegotiatedProtocolVersion(), era, 'the era the client negotiated');
  const listed = await client.listTools();
  assert.deepEqual(listed.tools.map((tool) => tool.name).sort(), ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay']);
  const appended = await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note' }) } });
  assert.equal((appended.structuredContent as { id: string }).id, 'relay-0001', textOf(appended));
  await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'reply', parent: 'relay-0001' }) } });
  assert.equal(textOf(await client.callTool({ name: 'exists', arguments: { id: 'relay-0001' } })), 'relay-0001 PRESENT');
  const got = await client.callTool({ name: 'get_relay', arguments: { id: 'relay-0001' } });
  assert.match(textOf(got), /kind: note/);
  const listedRelays = await client.callTool({ name: 'list_relays', arguments: {} });
  assert.deepEqual((listedRelays.structuredContent as { present: string[] }).present, ['relay-0001', 'relay-0002']);
  const replies = await client.callTool({ name: 'list_replies', arguments: { id: 'relay-0001' } });
  assert.match(textOf(replies), /relay-0002/);
  const waited = await client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0001', timeout_ms: 1000 } });
  assert.deepEqual((waited.structuredContent as { appeared: { id: string }[] }).appeared.map((r) => r.id), ['relay-0002']);

  const refused = await client.callTool({ name: 'get_relay', arguments: { id: 'relay-0099' } });
  assert.equal(refused.isError, true);
  assert.equal(errorCode(refused), 'not_found');
  const invalid = await client.callTool({ name: 'exists', arguments: { ident: 'relay-0001' } });
  assert.equal(invalid.isError, true);
  assert.equal(errorCode(invalid), 'invalid_arguments', textOf(invalid));
  assert.match(textOf(invalid), /inputSchema/, 'the sentence says what to send instead');
}

describe('stdio: the v2 client in every mode', { concurrency: true }, () => {
  for (const mode of Object.keys(MODES) as ModeName[]) {
    test(`${mode}: every tool, a refusal and a schema failure, in the ${MODES[mode].era} era`, async (t) => {
      const { corpus } = await tempStore(t);
      await everyTool(await stdioV2(t, corpus, mode), MODES[mode].era);
    });
  }
});

describe('HTTP: the v2 client in every mode', { concurrency: true }, () => {
  for (const mode of Object.keys(MODES) as ModeName[]) {
    test(`${mode}: every tool, a refusal and a schema failure, in the ${MODES[mode].era} era`, async (t) => {
      const h = await startTestHub(t);
      await everyTool(await httpV2(t, h.url, mode, { agent: 'scout-7', key: await h.key('scout-7') }), MODES[mode].era);
    });
  }
});

describe('the bridge: the v2 client in every mode, toward a hub it reaches in 2026-07-28', { concurrency: true }, () => {
  for (const mode of Object.keys(MODES) as ModeName[]) {
    test(`${mode}: every tool, a refusal and a schema failure, in the ${MODES[mode].era} era`, async (t) => {
      const hub = await startHubProcess(t);
      const client = await bridgeV2(t, hub.url, hub.keys, mode, 'debug');
      await everyTool(client, MODES[mode].era);
      assert.match(client.stderr(), /connected to the hub at \S+ \(MCP 2026-07-28\)/, 'the bridge negotiated the modern era with the hub on its own');
    });
  }
});

/**
 * A wait longer than the client's own 60 s request timeout, kept alive by
 * the server's progress (the client resets its timeout on each), answered
 * by a record that lands at ~62 s; then a second wait cancelled by the
 * client, which must end on the server (its slot given back) while the
 * connection goes on answering. Every door, in both eras, all at once.
 */
describe('a 62 s wait kept alive by progress, and a cancel, on every door in both eras', { concurrency: true }, () => {
  const LONG: ModeName[] = ['legacy', 'pinned'];
  /** `activeWaits` reads the hub's gauge; stdio has none, so there only the client's side of the cancel is checked. */
  const waitAndCancel = async (client: Client, land: () => Promise<unknown>, activeWaits: (() => Promise<number>) | null) => {
    const progress: number[] = [];
    const started = Date.now();
    const waiting = client.callTool(
      { name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 90_000 } },
      { timeout: 60_000, resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p.progress) },
    );
    await new Promise((r) => setTimeout(r, 62_000 - (Date.now() - started)));
    await land();
    const result = await waiting;
    assert.deepEqual((result.structuredContent as { appeared: { id: string }[] }).appeared.map((r) => r.id), ['relay-0001'], textOf(result));
    assert.ok(Date.now() - started >= 62_000, 'answered after the client\'s own 60 s');
    assert.ok(progress.length >= 5, `progress every ~10 s kept it alive (${progress.length} notifications)`);

    const cancel = new AbortController();
    const cancelled = client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0001', timeout_ms: 60_000 } }, { signal: cancel.signal }).catch((err: Error) => err);
    if (activeWaits) await eventually(async () => (await activeWaits()) === 1, 'the wait to block', { timeoutMs: 10_000 });
    else await client.callTool({ name: 'exists', arguments: { id: 'relay-0001' } }); // the wait is in
    cancel.abort();
    assert.ok((await cancelled) instanceof Error, 'the client gave up on it');
    if (activeWaits) await eventually(async () => (await activeWaits()) === 0, 'the server to end the cancelled wait', { timeoutMs: 10_000 });
    assert.equal(textOf(await client.callTool({ name: 'exists', arguments: { id: 'relay-0001' } })), 'relay-0001 PRESENT', 'the connection goes on');
  };
  for (const mode of LONG) {
    test(`stdio, ${mode}`, { timeout: 120_000 }, async (t) => {
      const { corpus } = await tempStore(t);
      const client = await stdioV2(t, corpus, mode);
      await waitAndCancel(client, () => runCli(['append', '--corpus', corpus], { input: record({ kind: 'late' }) }), null);
    });
    test(`HTTP, ${mode}`, { timeout: 120_000 }, async (t) => {
      const h = await startTestHub(t);
      const client = await httpV2(t, h.url, mode, { agent: 'scout-7', key: await h.key('scout-7') });
      await waitAndCancel(client, () => h.store.append(Buffer.from(record({ kind: 'late' })), { depositedBy: 'cli/test' }), () => activeWaits(h.url));
    });
    test(`bridge, ${mode}`, { timeout: 120_000 }, async (t) => {
      const hub = await startHubProcess(t);
      const client = await bridgeV2(t, hub.url, hub.keys, mode);
      await waitAndCancel(client, () => runCli(['append', '--corpus', hub.corpus], { input: record({ kind: 'late' }) }), () => activeWaits(hub.url));
    });
  }
});

test('a modern tools/list carries ttlMs and cacheScope, and every modern result its resultType', async (t) => {
  const h = await startTestHub(t);
  const post = (method: string, params: Record<string, unknown>, name?: string) =>
    fetch(new URL('/mcp', h.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    });
  const list = await post('tools/list', {});
  assert.equal(list.headers.get('content-type'), 'application/json');
  const listed = ((await list.json()) as { result: Record<string, unknown> }).result;
  assert.equal(listed.resultType, 'complete');
  assert.equal(typeof listed.ttlMs, 'number');
  assert.ok(['public', 'private'].includes(listed.cacheScope as string));
  const call = await post('tools/call', { name: 'exists', arguments: { id: 'relay-0001' } }, 'exists');
  assert.equal(((await call.json()) as { result: { resultType: string } }).result.resultType, 'complete');
});

test('stdio: a server that cannot start answers the first request with why, then exits 1', async (t) => {
  const dir = await tempDir(t);
  for (const mode of ['legacy', 'auto'] as const) {
    const client = v2Client(mode);
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'serve', '--corpus', `${dir}/no-such-corpus`], stderr: 'pipe' });
    await assert.rejects(client.connect(transport), (err: Error) => {
      assert.match(err.message, /no corpus directory at .*no-such-corpus/, `${mode}: the client sees the sentence, not "Connection closed"`);
      return true;
    });
    await client.close().catch(() => {});
  }
  // And the process: the answer on stdout, the sentence on stderr too, exit 1.
  const child = spawn(process.execPath, [BIN, 'serve', '--corpus', `${dir}/no-such-corpus`], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } })}\n`);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const answer = JSON.parse(stdout.trim()) as { id: number; error: { message: string; data: { code: string } } };
  assert.equal(answer.id, 7);
  assert.equal(answer.error.data.code, 'no_corpus');
  assert.match(stderr, /no corpus directory/);
  assert.equal(code, 1);
});
