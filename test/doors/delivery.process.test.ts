/**
 * Addressed delivery (spec §8a) through every door: the real SDK client over
 * real stdio pipes to `serve`, the real hub over loopback HTTP (MCP, REST,
 * SSE), and the real CLI. One table of filters and the records each must
 * select, run through each door, then the behaviours a table cannot show:
 * a filtered-out record wakes nobody, the cursor on a timeout, inlined
 * bytes and their budget.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { digestOf } from '../../lib/model/deposit.js';
import { errorCode, record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { httpClient, openEvents, sign, sseReader, startTestHub } from '../support/http-helpers.js';
import { FORGERY, boundaryOf, fencedRecords } from '../support/fence.js';
import { eventually } from '../support/poll.js';

type Filter = { to?: string | string[]; from?: string | string[]; kind?: string | string[]; replies_to?: string };

/** The corpus every case runs against, in id order (relay-0001 …). */
const RECORDS: Record<string, string>[] = [
  { kind: 'question', from: 'a', to: 'b, c' }, //                      1: several recipients
  { kind: 'answer', from: 'b', to: 'a', parent: 'relay-0001' }, //     2
  { kind: 'note' }, //                                                 3: no to:, no from:
  { kind: 'question', from: 'Scout-7', to: 'scout-7' }, //             4: case differs
  { kind: 'answer', from: 'c', to: 'a all', ref: 'relay-0001 relay-0002' }, // 5: ref:, space-separated to:
  { kind: 'question', from: 'a', to: 'all' }, //                       6: a broadcast name
];

const CASES: [Filter, number[]][] = [
  [{}, [1, 2, 3, 4, 5, 6]],
  [{ to: 'b' }, [1]],
  [{ to: 'c' }, [1]],
  [{ to: 'a' }, [2, 5]],
  [{ to: 'scout-7' }, [4]],
  [{ to: 'Scout-7' }, []],
  [{ from: 'Scout-7' }, [4]],
  [{ from: 'scout-7' }, []],
  [{ to: ['scout-7', 'all'] }, [4, 5, 6]],
  [{ kind: 'answer' }, [2, 5]],
  [{ kind: ['question', 'note'] }, [1, 3, 4, 6]],
  [{ replies_to: 'relay-0001' }, [2, 5]],
  [{ replies_to: 'relay-0002' }, [5]],
  [{ kind: 'note', to: ['a', 'b', 'c', 'all', 'scout-7'] }, []],
  [{ kind: 'question', to: 'all' }, [6]],
  [{ kind: 'answer', from: 'c', to: 'a' }, [5]],
  [{ kind: 'answer', from: ['b', 'c'], replies_to: 'relay-0001', to: 'a' }, [2, 5]],
  [{ kind: 'answer', from: 'b', replies_to: 'relay-0002' }, []],
];

const ids = (ns: number[]) => ns.map((n) => `relay-${String(n).padStart(4, '0')}`);
const label = (f: Filter) => JSON.stringify(f);

function query(f: Filter, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams(extra);
  for (const [key, value] of Object.entries(f)) for (const v of [value].flat()) q.append(key, v);
  return q.toString();
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(result.isError, true, textOf(result));
  return result;
}

interface Appeared {
  id: string;
  parent: string | null;
  refs: string[];
  bytes?: string;
  digest?: string;
  bytesOmitted?: true;
}
interface WaitAnswer {
  appeared: Appeared[];
  timedOut: boolean;
  cursor: string;
}
const waitOf = (r: CallToolResult) => r.structuredContent as unknown as WaitAnswer;

async function appendAll(client: Client): Promise<void> {
  for (const headers of RECORDS) await call(client, 'append_relay', { bytes: record(headers) });
}

/** Checks list_relays and an after-wait of one MCP client against the whole table. */
async function checkTools(client: Client): Promise<void> {
  for (const [filter, expected] of CASES) {
    const listed = (await call(client, 'list_relays', filter)).structuredContent as { present: string[]; knownMissing: string[] };
    assert.deepEqual(listed.present, ids(expected), `list_relays ${label(filter)}`);
    if (expected.length === 0) continue; // a wait would block: the timeout case is its own test
    const waited = waitOf(await call(client, 'wait_for_relay', { ...filter, after: 'relay-0000', timeout_ms: 5000 }));
    assert.deepEqual(waited.appeared.map((a) => a.id), ids(expected), `wait_for_relay ${label(filter)}`);
    assert.equal(waited.cursor, 'relay-0006', `a wait's cursor covers the records it filtered out, ${label(filter)}`);
  }
}

test('stdio: every filter and combination selects the same records in list_relays and wait_for_relay', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  await appendAll(client);
  await checkTools(client);
});

test('HTTP: every filter and combination over /mcp, GET /relays and GET /events', async (t) => {
  const h = await startTestHub(t, { agents: ['scout-7'] });
  const key = await h.key('scout-7');
  const client = await httpClient(t, h.url, { agent: 'scout-7', key });
  // The table's records claim several from:, which one signing agent may not send (from_mismatch): the store takes them as a local operator's.
  for (const headers of RECORDS) await h.store.append(Buffer.from(record(headers)), { depositedBy: 'cli/test' });
  await checkTools(client);
  const base = Date.now();
  for (const [i, [filter, expected]] of CASES.entries()) {
    const rest = await fetch(`${h.url}/relays?${query(filter)}`, { headers: { Accept: 'application/json' } });
    assert.equal(rest.status, 200);
    assert.deepEqual(((await rest.json()) as { present: string[] }).present, ids(expected), `GET /relays ${label(filter)}`);
    // The catch-up of a stream resumed from the start holds exactly the matching records, and nothing after them.
    // A signature is accepted once: each stream is signed at its own second.
    const headers = { Authorization: sign('scout-7', key, 'GET', '', base - i * 1000) };
    const response = await fetch(`${h.url}/events?${query(filter, { after: 'relay-0000' })}`, { headers });
    assert.equal(response.status, 200, `${label(filter)}: ${response.status === 200 ? '' : await response.clone().text()}`);
    const events = sseReader(response);
    const got: string[] = [];
    for (let i = 0; i < expected.length; i++) got.push((await events.next()).id!);
    await assert.rejects(events.next(150), /no event in time/, `GET /events ${label(filter)} sent more`);
    await events.close();
    assert.deepEqual(got, ids(expected), `GET /events ${label(filter)}`);
  }
});

test('REST text answers filter too, and a bad filter is refused with what to send', async (t) => {
  const h = await startTestHub(t);
  for (const headers of RECORDS) await h.store.append(Buffer.from(record(headers)), { depositedBy: 'cli/test' });
  assert.equal(await (await fetch(`${h.url}/relays?to=a&kind=answer`)).text(), 'present (2): relay-0002 relay-0005\nknown missing (0):\n');
  const bad = await fetch(`${h.url}/relays?replies_to=relay-1`, { headers: { Accept: 'application/json' } });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as { error: string }).error, 'bad_id');
  const twice = await fetch(`${h.url}/relays?replies_to=relay-0001&replies_to=relay-0002`);
  assert.equal(twice.status, 400);
});

test('a filtered SSE stream sends a live record only when it matches', async (t) => {
  const h = await startTestHub(t);
  const events = sseReader(await openEvents(h.url, 'scout-7', await h.key('scout-7'), { query: 'to=scout-7&to=all' }));
  t.after(() => events.close());
  await eventually(() => h.hub.context.gate.streams.active === 1, 'the stream to be open');
  await h.store.append(Buffer.from(record({ to: 'someone-else' })), { depositedBy: 'cli/test' });
  await h.store.append(Buffer.from(record({ kind: 'note' })), { depositedBy: 'cli/test' });
  await h.store.append(Buffer.from(record({ to: 'x, all', parent: 'relay-0001', ref: 'relay-0002' })), { depositedBy: 'cli/test' });
  const event = await events.next();
  assert.equal(event.id, 'relay-0003');
  const data = JSON.parse(event.data) as Appeared;
  assert.deepEqual([data.parent, data.refs], ['relay-0001', ['relay-0002']]);
});

async function stdioPair(t: TestContext) {
  const { corpus } = await tempStore(t);
  const [a, b] = await Promise.all([stdioClient(t, corpus), stdioClient(t, corpus)]);
  return { corpus, writer: a.client, reader: b.client };
}

test('a record another process appends that the filter rejects wakes nobody; the timeout still moves the cursor past it', async (t) => {
  const { writer, reader } = await stdioPair(t);
  const waiting = reader.callTool({ name: 'wait_for_relay', arguments: { to: 'scout-7', after: 'relay-0000', timeout_ms: 1500 } }) as Promise<CallToolResult>;
  await call(writer, 'append_relay', { bytes: record({ to: 'scout-8' }) });
  await call(writer, 'append_relay', { bytes: record({ kind: 'note' }) });
  const answer = await waiting;
  const w = waitOf(answer);
  assert.deepEqual([w.appeared, w.timedOut, w.cursor], [[], true, 'relay-0002']);
  assert.match(textOf(answer), /timed out/);
  assert.match(textOf(answer), /^cursor: relay-0002\b/m, 'the cursor is in the text too');
});

test('a live filtered wait in one process answers only the matching record another process appends', async (t) => {
  const { writer, reader } = await stdioPair(t);
  const waiting = reader.callTool({ name: 'wait_for_relay', arguments: { to: 'scout-7', after: 'relay-0000', timeout_ms: 20000 } }) as Promise<CallToolResult>;
  await call(writer, 'append_relay', { bytes: record({ to: 'Scout-7' }) });
  await call(writer, 'append_relay', { bytes: record({ from: 'b' }) });
  await call(writer, 'append_relay', { bytes: record({ to: 'x scout-7', kind: 'question' }) });
  const w = waitOf(await waiting);
  assert.deepEqual(w.appeared.map((a) => a.id), ['relay-0003']);
  assert.equal(w.cursor, 'relay-0003');
});

test('a question item counts the held kind: answer records whose parent it is; other items carry no count', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  await appendAll(client);
  const answersOf = async () => {
    const r = await call(client, 'wait_for_relay', { after: 'relay-0000', timeout_ms: 0 });
    return { counts: Object.fromEntries((r.structuredContent as { appeared: (Appeared & { answers?: number })[] }).appeared.map((a) => [a.id, a.answers])), text: textOf(r) };
  };
  // relay-0001 has one answer by parent: (2) and one that only cites it in ref: (5), which is not counted.
  assert.deepEqual((await answersOf()).counts, { 'relay-0001': 1, 'relay-0002': undefined, 'relay-0003': undefined, 'relay-0004': 0, 'relay-0005': undefined, 'relay-0006': 0 });
  await call(client, 'append_relay', { bytes: record({ kind: 'note', parent: 'relay-0006' }, 'a note is no answer') });
  await call(client, 'append_relay', { bytes: record({ kind: 'answer', from: 'b', to: 'a', parent: 'relay-0006' }, 'one') });
  await call(client, 'append_relay', { bytes: record({ kind: 'answer', from: 'c', to: 'a', parent: 'relay-0006' }, 'two') });
  const { counts, text } = await answersOf();
  assert.equal(counts['relay-0006'], 2);
  assert.match(text, /^relay-0006 \(kind question, from a, to all\) deposited-by mcp, as-received, sender unproven, 2 answers held \(by b, c\)$/m);
});

test('a wait that times out answers the cursor of what is held, past records its filter passed over', async (t) => {
  const { writer, reader } = await stdioPair(t);
  await call(writer, 'append_relay', { bytes: record() });
  await eventually(async () => ((await call(reader, 'list_relays', {})).structuredContent as { present: string[] }).present.length === 1, 'the reader to index it');
  const w = waitOf(await call(reader, 'wait_for_relay', { after: 'relay-0000', to: 'nobody', timeout_ms: 100 }));
  assert.deepEqual([w.appeared, w.timedOut, w.cursor], [[], true, 'relay-0001']);
});

test('include_bytes inlines the record bytes and digest, and omits what passes 64 KiB in one answer', async (t) => {
  const { writer, reader } = await stdioPair(t);
  const small = record({ to: 'me' }, 'small');
  const big = record({ to: 'me' }, 'x'.repeat(40 * 1024));
  for (const bytes of [small, big, big, small]) await call(writer, 'append_relay', { bytes });
  const answer = await call(reader, 'wait_for_relay', { to: 'me', after: 'relay-0000', include_bytes: true });
  const items = waitOf(answer).appeared;
  assert.deepEqual(items.map((i) => [i.bytes === undefined ? null : i.bytes.length, i.bytesOmitted ?? false]), [[small.length, false], [big.length, false], [null, true], [null, true]]);
  assert.equal(items[0]!.bytes, small);
  assert.equal(items[0]!.digest, digestOf(Buffer.from(small)));
  assert.match(textOf(answer), />>> relay-0001 ([0-9a-f]{12}) bytes, sha256:[0-9a-f]{64}\n@p-e\/x0\nto: me\n\nsmall\n<<< relay-0001 \1\n/);
  assert.equal(waitOf(await call(reader, 'wait_for_relay', { to: 'me', after: 'relay-0000' })).appeared[0]!.bytes, small, 'bytes unless the call says no');
  const plain = waitOf(await call(reader, 'wait_for_relay', { to: 'me', after: 'relay-0000', include_bytes: false })).appeared;
  assert.equal(plain[0]!.bytes, undefined, 'no bytes when told not to');
});

test('wait\'s text fences inlined bytes with a boundary drawn per answer: a body that draws frames reads back as its own bytes, by MCP and by the CLI', async (t) => {
  const { corpus, writer, reader } = await stdioPair(t);
  const bytes = [record({ from: 'mallory', to: 'me' }, FORGERY), record({ from: 'planner', to: 'me' }, 'the real one')];
  for (const b of bytes) await call(writer, 'append_relay', { bytes: b });
  const answer = await call(reader, 'wait_for_relay', { to: 'me', after: 'relay-0000', include_bytes: true });
  assert.deepEqual(fencedRecords(textOf(answer)).map((r) => [r.id, r.text]), [['relay-0001', bytes[0]], ['relay-0002', bytes[1]]]);
  const cli = await runCli(['wait', '--corpus', corpus, '--after', 'relay-0000', '--to', 'me', '--include-bytes', '--timeout', '0']);
  assert.equal(cli.code, 0, cli.stderr);
  assert.deepEqual(fencedRecords(cli.stdout).map((r) => r.text), bytes);
  assert.notEqual(boundaryOf(cli.stdout), boundaryOf(textOf(answer)));
});

test('a malformed replies_to, or a to that names nobody, is refused before the wait begins', async (t) => {
  const { reader } = await stdioPair(t);
  for (const [args, code] of [[{ replies_to: 'relay-1' }, 'bad_id'], [{ to: [] }, 'bad_filter'], [{ to: ' , ' }, 'bad_filter']] as const) {
    const result = (await reader.callTool({ name: 'wait_for_relay', arguments: { ...args, timeout_ms: 60000 } })) as CallToolResult;
    assert.equal(result.isError, true, JSON.stringify(args));
    assert.equal(errorCode(result), code, JSON.stringify(args));
  }
});

test('CLI: ls and wait take the filters, and wait prints the cursor last', async (t) => {
  const { corpus } = await tempStore(t);
  for (const headers of RECORDS) assert.equal((await runCli(['append', '--corpus', corpus], { input: record(headers) })).code, 0);
  const ls = await runCli(['ls', '--corpus', corpus, '--to', 'scout-7', '--to', 'all']);
  assert.equal(ls.stdout, 'present (3): relay-0004 relay-0005 relay-0006\nknown missing (0):\n');
  const wait = await runCli(['wait', '--corpus', corpus, '--after', 'relay-0000', '--kind', 'answer', '--replies-to', 'relay-0002']);
  assert.equal(wait.code, 0);
  assert.match(wait.stdout, /^1 appeared after \d+ ms:\nrelay-0005 \(kind answer, from c, to a all, refs relay-0001 relay-0002\) deposited-by cli\/\S+, as-received\ncursor: relay-0006 \(to read on from there, pass it as after\)\n$/);
  const none = await runCli(['wait', '--corpus', corpus, '--after', 'relay-0000', '--to', 'nobody', '--timeout', '100']);
  assert.equal(none.code, 3);
  assert.match(none.stdout, /\(timed out\)\ncursor: relay-0006 /);
});

test('CLI: tail -f --to prints one line per matching record as it lands, nothing for the others', async (t) => {
  const { corpus } = await tempStore(t);
  const { spawn } = await import('node:child_process');
  const { BIN } = await import('../support/helpers.js');
  const tail = spawn(process.execPath, [BIN, 'tail', '--corpus', corpus, '-n', '0', '-f', '--to', 'scout-7'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => tail.kill('SIGTERM'));
  let out = '';
  tail.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  let err = '';
  tail.stderr.setEncoding('utf8').on('data', (d) => (err += d));
  // tail prints nothing until something matches; give its watcher a moment by waiting for a first match.
  const sendUntilSeen = async () => {
    for (let i = 0; i < 50 && out === ''; i++) {
      await runCli(['append', '--corpus', corpus], { input: record({ to: 'scout-7', kind: 'ping' }) });
      await eventually(() => out !== '', 'tail to print', { timeoutMs: 300 }).catch(() => {});
    }
  };
  await sendUntilSeen();
  assert.notEqual(out, '', err);
  out = '';
  await runCli(['append', '--corpus', corpus], { input: record({ to: 'other' }) });
  const last = await runCli(['append', '--corpus', corpus], { input: record({ to: 'all scout-7', kind: 'question', parent: 'relay-0001' }) });
  const id = last.stdout.trim();
  await eventually(() => out.includes(id), `tail to print ${id}`);
  assert.match(out, new RegExp(`^${id} \\(kind question, to all scout-7, parent relay-0001\\) deposited-by cli/\\S+, as-received\\n$`));
});
