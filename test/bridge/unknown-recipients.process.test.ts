/**
 * A signed append whose to: names someone the hub has never seen is stored,
 * and the hub's answer says so (unknownRecipients). The bridge signs every
 * append as its agent, so that is the answer its agent gets: a success with
 * the id, the field listed in the contract the hub lists, and never a
 * failure after the record was stored (the agent would send it again).
 * Real hub process, real bridge process, real SDK client over stdio, which
 * lists the tools first (as every client does) and so checks each answer
 * against the listed output schema.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { record, textOf } from '../support/helpers.js';
import { bridgeClient, startHubProcess } from '../support/bridge-helpers.js';

const AGENT = 'scout-7';
/** A name no agent of the hub has served or signed as. */
const STRANGER = 'nobody-here';
/** An agent the hub holds a key for, who has not waited yet. */
const PEER = 'scout-8';

async function recordFiles(corpus: string): Promise<string[]> {
  return (await readdir(corpus)).filter((name) => /^relay-\d{4}$/.test(name)).sort();
}

test('an append to a name the hub does not know is answered with its id and unknownRecipients, and stored once', async (t) => {
  const hub = await startHubProcess(t, { agents: [AGENT] });
  const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
  await client.listTools();

  const bytes = record({ kind: 'question', from: AGENT, to: STRANGER }, 'which route?');
  const result = (await client.callTool({ name: 'append_relay', arguments: { bytes } })) as CallToolResult;
  assert.ok(!result.isError, textOf(result));
  const answer = result.structuredContent as { id: string; unknownRecipients?: string[] };
  assert.equal(answer.id, 'relay-0001');
  assert.deepEqual(answer.unknownRecipients, [STRANGER]);
  assert.deepEqual(await recordFiles(hub.corpus), [answer.id], 'stored once');
});

test('the append_relay the bridge lists (the hub\'s own) names unknownRecipients in its output, as the hub answers a signed append', async (t) => {
  const hub = await startHubProcess(t, { agents: [AGENT] });
  const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
  const { tools } = await client.listTools();
  const append = tools.find((tool) => tool.name === 'append_relay')!;
  const properties = (append.outputSchema?.properties ?? {}) as Record<string, { type?: string }>;
  assert.equal(properties.unknownRecipients?.type, 'array');
  assert.ok(!(append.outputSchema?.required as string[] | undefined)?.includes('unknownRecipients'), 'only when to: names a stranger');
  assert.ok('digest' in properties, "the rest is the hub's own schema");
});

test('list_replies through the bridge answers deliveredTo once an agent keeps marks on the hub, and lists the field', async (t) => {
  const hub = await startHubProcess(t, { agents: [AGENT, PEER] });
  const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
  const { tools } = await client.listTools();
  assert.ok('deliveredTo' in ((tools.find((tool) => tool.name === 'list_replies')!.outputSchema?.properties ?? {}) as object));
  // A signed wait without after is a named agent's: the hub keeps its place (marks), and receipts count from them.
  const wait = (await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 0 } })) as CallToolResult;
  assert.ok(!wait.isError, textOf(wait));
  const appended = (await client.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'question', from: AGENT, to: PEER }, 'seen it?') } })) as CallToolResult;
  const { id } = appended.structuredContent as { id: string };

  const result = (await client.callTool({ name: 'list_replies', arguments: { id } })) as CallToolResult;
  assert.ok(!result.isError, textOf(result));
  assert.deepEqual((result.structuredContent as { deliveredTo?: string[] }).deliveredTo, []);
});
