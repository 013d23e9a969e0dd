/**
 * The text filter at every door that takes filters: the MCP tools over a
 * real stdio server, GET /relays, the /events stream and the CLI; and what
 * each refuses (bad_filter, with a sentence saying what to send): no word,
 * 10 KB of text, NUL, invalid UTF-8, and a pattern, which is only words.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { openStore } from '../../lib/store/store.js';
import { BIN, record, runCli, stdioClient, tempStore } from '../support/helpers.js';
import { openEvents, sseReader, startTestHub, type TestHub } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';
import { refused, refusedHttp } from '../support/refusal.js';

const run = promisify(execFile);
/** The first line of a listing: the held ids (a filtered one lists no missing ids). */
const present = async (answer: Response | Promise<{ stdout: string }>) =>
  (answer instanceof Response ? await answer.text() : (await answer).stdout).split('\n')[0];
const BY = { depositedBy: 'cli/test' };
const TEN_KB = 'word '.repeat(2048);

/** Three records: two about a full disk (one in a header value), one not. */
async function seed(corpus: string): Promise<void> {
  const store = await openStore({ corpus, watch: 'none' });
  await store.append(Buffer.from(record({ kind: 'status' }, 'Disk FULL on host-3')), BY);
  await store.append(Buffer.from(record({ kind: 'note' }, 'the disk is fine')), BY);
  await store.append(Buffer.from(record({ kind: 'full', from: 'disk-watch' }, 'again')), BY);
  await store.close();
}

test('MCP: list_relays and wait_for_relay over stdio keep the records holding every word', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus);
  const { client } = await stdioClient(t, corpus);
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const listed = (await call('list_relays', { text: 'disk full' })).structuredContent as { present: string[] };
  assert.deepEqual(listed.present, ['relay-0001', 'relay-0003']);
  const waited = (await call('wait_for_relay', { after: 'relay-0001', text: 'DISK', kind: 'note', timeout_ms: 0 })).structuredContent as { appeared: { id: string }[] };
  assert.deepEqual(waited.appeared.map((item) => item.id), ['relay-0002']);
  for (const [name, text] of [['list_relays', ''], ['wait_for_relay', TEN_KB], ['list_relays', '.*'], ['list_relays', 'a\0b']] as const) {
    const refusal = refused(await call(name, { text, timeout_ms: 0 }), 'bad_filter');
    assert.match(refusal.message, /Send a few words/, `${name} ${JSON.stringify(text.slice(0, 8))}`);
  }
});

async function hub(t: Parameters<typeof startTestHub>[0]): Promise<TestHub> {
  const h = await startTestHub(t, { agents: ['scout-7', 'scout-8'] });
  for (const [headers, body] of [[{ kind: 'status' }, 'Disk FULL on host-3'], [{ kind: 'note' }, 'the disk is fine'], [{ from: 'disk-watch' }, 'full']] as const) {
    await h.store.append(Buffer.from(record(headers, body)), BY);
  }
  return h;
}

test('REST: GET /relays?text= lists the records holding every word; a pattern is words, never a regex', async (t) => {
  const h = await hub(t);
  assert.equal(await present(await fetch(`${h.url}/relays?text=disk%20full`)), 'present (2): relay-0001 relay-0003');
  assert.equal(await present(await fetch(`${h.url}/relays?text=disk&kind=note`)), 'present (1): relay-0002');
  assert.equal(await present(await fetch(`${h.url}/relays?text=host.3`)), 'present (1): relay-0001', 'the dot separates two words');
  assert.equal(await present(await fetch(`${h.url}/relays?text=d.sk`)), 'present (0):', 'and never stands for a letter');
});

test('REST: GET /relays refuses a text with no word, 10 KB of it, NUL, invalid UTF-8, or two of them', async (t) => {
  const h = await hub(t);
  const queries = ['text=', 'text=%20%20', 'text=.*', `text=${encodeURIComponent(TEN_KB)}`, 'text=disk%00full', 'text=disk%FF', 'text=disk&text=full'];
  for (const query of queries) {
    const refusal = await refusedHttp(await fetch(`${h.url}/relays?${query}`), 'bad_filter');
    assert.match(refusal.message, /text .*\. Send/, query.slice(0, 30));
  }
  assert.equal((await h.store.listIds()).present.length, 3, 'nothing stored, nothing changed');
});

test('SSE: /events?text= sends only the records holding the words, held and live', async (t) => {
  const h = await hub(t);
  const key = await h.key('scout-7');
  const events = sseReader(await openEvents(h.url, 'scout-7', key, { query: 'after=relay-0000&text=full' }));
  t.after(() => events.close());
  assert.equal((await events.next()).id, 'relay-0001');
  assert.equal((await events.next()).id, 'relay-0003');
  await eventually(() => h.hub.context.gate.streams.active === 1, 'the stream to be open');
  await h.store.append(Buffer.from(record({}, 'all clear')), BY);
  await h.store.append(Buffer.from(record({}, 'full again')), BY);
  assert.equal((await events.next()).id, 'relay-0005');
  await refusedHttp(await openEvents(h.url, 'scout-8', await h.key('scout-8'), { query: 'text=%2A%2A' }), 'bad_filter');
});

test('CLI: ls, tail and wait take --text; an empty, oversized or invalid UTF-8 one is refused', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus);
  const at = ['--corpus', corpus];
  assert.equal(await present(runCli(['ls', ...at, '--text', 'Disk Full'])), 'present (2): relay-0001 relay-0003');
  const tail = await runCli(['tail', ...at, '-n', '1', '--text', 'disk']);
  assert.equal(tail.code, 0, tail.stderr);
  assert.match(tail.stdout, /^relay-0003 /);
  const wait = await runCli(['wait', ...at, '--after', 'relay-0000', '--timeout', '0', '--text', 'fine']);
  assert.equal(wait.code, 0, wait.stderr);
  assert.match(wait.stdout, /^1 appeared after .*\nrelay-0002 \(kind note\)/);
  for (const text of ['', TEN_KB]) {
    const result = await runCli(['ls', ...at, '--text', text]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^p-e-relay ls: text .*Send a few words/);
  }
  // An argument of invalid UTF-8 bytes, as a shell passes it.
  const bytes = await run('bash', ['-c', `"$0" "$1" ls --corpus "$2" --text $'disk\\xff' || echo "exit $?"`, process.execPath, BIN, corpus]);
  assert.match(bytes.stderr, /^p-e-relay ls: text is not valid UTF-8/);
  assert.match(bytes.stdout, /exit 1/);
});
