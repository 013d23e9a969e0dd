/**
 * Nothing lost, nothing duplicated, nothing half-written, under load from
 * every door at once: stdio servers, HTTP hubs (signed REST and signed MCP)
 * and CLI appends, all real processes, all on one corpus at the same time.
 *
 * Short form in `npm test`: 6 server lanes × 25 and 2 CLI lanes × 8 appends.
 * P_E_RELAY_LONG=1: 8 lanes × 250 (2,000 appends).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { localUser } from '../../lib/cli/command.js';
import { splitRecordFile } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { verifyCorpus } from '../../lib/ops/verify.js';
import { record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { sign } from '../support/http-helpers.js';
import { hubProcess, pool, scale } from '../support/reliability-helpers.js';
import { eventually } from '../support/poll.js';

const shape = idShape();
const PER_LANE = scale(25, 250);
/** A CLI append is a whole process (~120 ms on two cores), so the short form sends fewer of them. */
const PER_CLI_LANE = scale(8, 250);
const TOTAL = 6 * PER_LANE + 2 * PER_CLI_LANE;
const CORPUS_DOTFILES = ['.gitattributes', '.gitignore', '.p-e-relay', '.state'];

/** A record no other lane or append sends: the lane and index are in it, and a random-length body. */
/** `from` is the lane, or over HTTP the signing agent (a hub refuses any other from:, spec §8d). */
function uniqueRecord(lane: string, i: number, from = lane): Buffer {
  const padding = randomBytes(Math.floor(Math.random() * 1500)).toString('base64');
  return Buffer.from(record({ kind: 'load', from }, `${lane} #${i}\n${padding}\n`));
}

interface Landed {
  id: string;
  bytes: Buffer;
  depositedBy: string;
}

test(`8 processes, ${TOTAL} concurrent appends (4 stdio servers, 2 signed HTTP hubs, 2 CLI lanes): ids distinct and contiguous, every byte as sent, nothing outside .state/`, { timeout: scale(60_000, 600_000) }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'hub-a');
  await addKey(keys, 'hub-b');
  const keyA = (await readKey(keys, 'hub-a'))!;
  const keyB = (await readKey(keys, 'hub-b'))!;
  const [stdio, hubs] = await Promise.all([
    Promise.all([0, 1, 2, 3].map(() => stdioClient(t, corpus).then((c) => c.client))),
    Promise.all([0, 1].map(() => hubProcess(t, corpus, keys, { args: ['--append-rate', '100000'], env: { P_E_RELAY_LOG: 'warn' } }))),
  ]);
  const [hubA, hubB] = hubs as [(typeof hubs)[0], (typeof hubs)[0]];
  const user = localUser();

  const stdioLane = (lane: number) =>
    Array.from({ length: PER_LANE }, async (_, i): Promise<Landed> => {
      const bytes = uniqueRecord(`stdio-${lane}`, i);
      const result = (await stdio[lane]!.callTool({ name: 'append_relay', arguments: { bytes: bytes.toString('utf8') } })) as CallToolResult;
      assert.notEqual(result.isError, true, textOf(result));
      const { id, depositedBy } = result.structuredContent as { id: string; depositedBy: string };
      return { id, bytes, depositedBy };
    });

  // hub A takes records on REST, hub B as MCP tool calls: both signed, each request its own signature.
  const restLane = () =>
    Array.from({ length: PER_LANE }, async (_, i): Promise<Landed> => {
      const bytes = uniqueRecord('rest-a', i, 'hub-a');
      const res = await fetch(`${hubA.url}/relays`, { method: 'POST', body: bytes, headers: { Authorization: sign('hub-a', keyA, 'POST', bytes), Accept: 'application/json' } });
      const answer = (await res.json()) as { id: string; depositedBy: string };
      assert.equal(res.status, 201, JSON.stringify(answer));
      return { id: answer.id, bytes, depositedBy: answer.depositedBy };
    });
  const mcpLane = () =>
    Array.from({ length: PER_LANE }, async (_, i): Promise<Landed> => {
      const bytes = uniqueRecord('mcp-b', i, 'hub-b');
      const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'append_relay', arguments: { bytes: bytes.toString('utf8') } } });
      const res = await fetch(`${hubB.url}/mcp`, {
        method: 'POST',
        body,
        headers: { Authorization: sign('hub-b', keyB, 'POST', body), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      });
      const answer = (await res.json()) as { result: CallToolResult };
      assert.equal(res.status, 200);
      assert.notEqual(answer.result.isError, true, textOf(answer.result));
      const { id, depositedBy } = answer.result.structuredContent as { id: string; depositedBy: string };
      return { id, bytes, depositedBy };
    });
  // A CLI lane is a stream of short-lived `p-e-relay append` processes, six at a time.
  const cliLane = (lane: number) =>
    pool(
      6,
      Array.from({ length: PER_CLI_LANE }, (_, i) => async (): Promise<Landed> => {
        const bytes = uniqueRecord(`cli-${lane}`, i);
        const out = await runCli(['append', '--corpus', corpus], { input: bytes, env: { P_E_RELAY_LOG: 'warn' } });
        assert.equal(out.code, 0, out.stderr);
        return { id: out.stdout.trim(), bytes, depositedBy: `cli/${user}` };
      }),
    );

  const lanes = await Promise.all([
    ...[0, 1, 2, 3].map((lane) => Promise.all(stdioLane(lane))),
    Promise.all(restLane()),
    Promise.all(mcpLane()),
    cliLane(0),
    cliLane(1),
  ]);
  const landed = lanes.flat();
  const total = TOTAL;
  assert.equal(landed.length, total);

  // Every id distinct and contiguous from relay-0001: nothing duplicated, no id skipped.
  const ids = landed.map((l) => l.id).sort();
  assert.equal(new Set(ids).size, total, 'no id was handed out twice');
  assert.deepEqual(ids, Array.from({ length: total }, (_, i) => shape.format(i + 1)));

  // Every file holds exactly the bytes its sender sent, with a good digest and the right channel.
  for (const l of landed) {
    const split = splitRecordFile(await readFile(path.join(corpus, l.id)));
    assert.deepEqual(split.record, l.bytes, `${l.id} holds the bytes that were sent`);
    assert.equal(split.deposit.depositedBy, l.depositedBy);
  }
  assert.deepEqual([...new Set(landed.map((l) => l.depositedBy))].sort(), ['cli/' + user, 'http/hub-a', 'mcp', 'mcp/hub-b'].sort());

  const report = await verifyCorpus(corpus);
  assert.equal(report.checked, total);
  assert.deepEqual(report.damaged, []);
  assert.deepEqual([...report.stray, ...report.live], [], 'no temp file left behind');
  assert.deepEqual(await readdir(corpusPaths(corpus).tmp), []);
  assert.deepEqual((await readdir(corpus)).filter((name) => shape.parseRecordId(name) === null).sort(), CORPUS_DOTFILES, 'nothing but records outside .state/');

  // Every serving process came to index every record, whoever wrote it.
  for (const client of stdio) {
    await eventually(async () => ((await client.callTool({ name: 'list_relays', arguments: {} })).structuredContent as { present: string[] }).present.length === total, 'a stdio server to index every record');
  }
  for (const hub of [hubA, hubB]) {
    await eventually(async () => ((await (await fetch(`${hub.url}/relays`, { headers: { Accept: 'application/json' } })).json()) as { present: string[] }).present.length === total, 'a hub to index every record');
  }
  t.diagnostic(`appends: ${total} (6 server lanes × ${PER_LANE}, 2 CLI lanes × ${PER_CLI_LANE}), ids distinct and contiguous, bytes lost 0`);
});

test('8 processes re-deposit the same KNOWN_MISSING record at the same instant: it lands once, and every other caller learns its bytes are already there', async (t) => {
  const { corpus } = await tempStore(t);
  // relay-0001, relay-0002 (the record that will be lost), relay-0003 citing it; then relay-0002's file goes.
  const lost = record({ kind: 'answer', parent: 'relay-0001' }, 'the record everyone retries');
  for (const [input, id] of [[record({ kind: 'question' }), 'relay-0001'], [lost, 'relay-0002'], [record({ kind: 'note', ref: 'relay-0002' }), 'relay-0003']] as const) {
    const appended = await runCli(['append', '--corpus', corpus], { input });
    assert.equal(appended.stdout.trim(), id, appended.stderr);
  }
  await unlink(path.join(corpus, 'relay-0002'));
  const clients = await Promise.all(Array.from({ length: 8 }, () => stdioClient(t, corpus).then((c) => c.client)));
  const results = (await Promise.all(clients.map((c) => c.callTool({ name: 'append_relay', arguments: { id: 'relay-0002', bytes: lost } })))) as CallToolResult[];
  const landed = results.filter((r) => !r.isError);
  assert.equal(landed.length, 1, 'exactly one call stored it');
  for (const r of results.filter((x) => x.isError)) {
    const meta = (r._meta as Record<string, { code: string; identical: boolean }>)['p-e-relay/error']!;
    assert.deepEqual([meta.code, meta.identical], ['id_held', true], textOf(r));
  }
  assert.deepEqual((await readdir(corpus)).filter((n) => shape.parseRecordId(n) !== null).sort(), ['relay-0001', 'relay-0002', 'relay-0003']);
  assert.deepEqual((await verifyCorpus(corpus)).damaged, []);
});
