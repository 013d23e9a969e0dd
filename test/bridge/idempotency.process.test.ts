/**
 * The bridge's retry can never duplicate (spec §8b): every append it
 * forwards carries an idempotency key, so when the hub's answer is lost on
 * the way back, the bridge sends the call again and the hub answers the
 * record the first try stored. Real hub process, real bridge process, real
 * SDK client over stdio; between bridge and hub an HTTP proxy on loopback
 * that lets the first append reach the hub and then drops its answer.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { record, textOf } from '../support/helpers.js';
import { bridgeClient, startHubProcess } from '../support/bridge-helpers.js';
import { httpClient } from '../support/http-helpers.js';

const AGENT = 'scout-7';

/** Forwards to `target`; the first `drop` appends reach the hub, then lose their answer. */
async function droppingProxy(t: { after(fn: () => unknown): void }, target: string, drop: number): Promise<{ url: string; appendsSeen: () => number }> {
  let appends = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || ['host', 'connection', 'content-length'].includes(name)) continue;
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const isAppend = /"name":"append_relay"/.test(body.toString());
    if (isAppend) appends++;
    const answer = await fetch(new URL(req.url ?? '/', target), { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body });
    const bytes = Buffer.from(await answer.arrayBuffer()); // the hub has answered: the record is stored
    if (isAppend && appends <= drop) {
      req.socket.destroy(); // the answer is lost on its way back
      return;
    }
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)) out[name] = value;
    });
    res.writeHead(answer.status, out).end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  t.after(() => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, appendsSeen: () => appends };
}

async function recordFiles(corpus: string): Promise<string[]> {
  return (await readdir(corpus)).filter((name) => /^relay-\d{4}$/.test(name)).sort();
}

test('the bridge retries an append whose answer was dropped, with the same key: one record, answered replayed', async (t) => {
  const hub = await startHubProcess(t, { agents: [AGENT] });
  const proxy = await droppingProxy(t, hub.url, 1);
  const { client } = await bridgeClient(t, proxy.url, AGENT, hub.keys);
  // As every client does before its first call; the bridge learns the hub takes keys.
  const { tools } = await client.listTools();
  assert.ok('idempotency_key' in (tools.find((tool) => tool.name === 'append_relay')!.inputSchema.properties ?? {}));

  const bytes = record({ kind: 'note', from: AGENT }, 'sent once, answered twice');
  const result = (await client.callTool({ name: 'append_relay', arguments: { bytes } })) as CallToolResult;
  assert.ok(!result.isError, textOf(result));
  const answer = result.structuredContent as { id: string; replayed?: boolean; depositedBy: string };
  assert.equal(proxy.appendsSeen(), 2, 'the first try reached the hub and its answer was lost; the second was answered');
  assert.equal(answer.replayed, true, 'the retry answered the record the first try stored');
  assert.equal(answer.depositedBy, `mcp/${AGENT}`);
  assert.deepEqual(await recordFiles(hub.corpus), [answer.id], 'one record, never two');
  const head = (await readFile(path.join(hub.corpus, answer.id), 'utf8')).split('\n---\n')[0]!;
  assert.match(head, /\nidempotency-key: sha256\/[0-9a-f]{64}$/, 'the key the bridge added (its bytes\' key) is in the deposit header');
});

test("the bridge keeps the client's own idempotency key, so the client's retry answers the same record", async (t) => {
  const hub = await startHubProcess(t, { agents: [AGENT] });
  const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
  await client.listTools();
  const args = { bytes: record({ kind: 'note', from: AGENT }, 'mine'), idempotency_key: 'client-key-1' };
  const first = (await client.callTool({ name: 'append_relay', arguments: args })) as CallToolResult;
  const again = (await client.callTool({ name: 'append_relay', arguments: args })) as CallToolResult;
  assert.ok(!first.isError && !again.isError, textOf(first) + textOf(again));
  const [a, b] = [first, again].map((r) => r.structuredContent as { id: string; replayed?: boolean });
  assert.equal(b!.id, a!.id);
  assert.equal(a!.replayed, undefined);
  assert.equal(b!.replayed, true);
  assert.match(await readFile(path.join(hub.corpus, a!.id), 'utf8'), /\nidempotency-key: client-key-1\n---\n/);
});

test('when every try loses its answer the bridge gives up with hub_unreachable after its retries, and still stored one record', async (t) => {
  const hub = await startHubProcess(t, { agents: [AGENT] });
  const proxy = await droppingProxy(t, hub.url, 99);
  const { client } = await bridgeClient(t, proxy.url, AGENT, hub.keys);
  await client.listTools();
  const result = (await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note' }, 'lost thrice') } })) as CallToolResult;
  assert.equal(result.isError, true);
  assert.equal((result._meta?.['p-e-relay/error'] as { code?: string } | undefined)?.code, 'hub_unreachable');
  assert.equal(proxy.appendsSeen(), 3, 'the first try and two retries');
  assert.equal((await recordFiles(hub.corpus)).length, 1);
});

test('an answer is keyed by its parsed question id on every door: one sent through the bridge and again straight to the hub lands once', async (t) => {
  const hub = await startHubProcess(t, { agents: [AGENT, 'planner'] });
  const { client: bridge } = await bridgeClient(t, hub.url, AGENT, hub.keys);
  await bridge.listTools();
  const key = Buffer.from((await readFile(path.join(hub.keys, `${AGENT}.key`), 'utf8')).trim());
  const direct = await httpClient(t, hub.url, { agent: AGENT, key });
  const asked = (await direct.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'note', from: AGENT }, 'a question to answer') } })) as CallToolResult;
  const question = (asked.structuredContent as { id: string }).id;
  // The raw parent: text is no key: past its id it holds spaces, parentheses and a character that is not ASCII.
  const answer = (words: string) => record({ kind: 'answer', from: AGENT, to: 'planner', parent: `${question} (re: the pass \u2014 thanks)` }, words);
  const viaBridge = (await bridge.callTool({ name: 'append_relay', arguments: { bytes: answer('open') } })) as CallToolResult;
  assert.ok(!viaBridge.isError, textOf(viaBridge));
  const stored = viaBridge.structuredContent as { id: string };
  assert.match(await readFile(path.join(hub.corpus, stored.id), 'utf8'), new RegExp(`\nidempotency-key: ${AGENT}/answer/${question}\n---\n`));
  const again = (await direct.callTool({ name: 'append_relay', arguments: { bytes: answer('open') } })) as CallToolResult;
  assert.deepEqual([(again.structuredContent as { id: string; replayed?: boolean }).id, (again.structuredContent as { replayed?: boolean }).replayed], [stored.id, true], textOf(again));
  assert.deepEqual(await recordFiles(hub.corpus), [question, stored.id], 'the question and one answer');
});

