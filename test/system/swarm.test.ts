/**
 * Many processes on one corpus, as a local swarm runs: real `serve`
 * processes, real pipes, real files, real SIGKILL.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { buildRecordFile, digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { verifyCorpus } from '../../lib/ops/verify.js';
import { BIN, killed, record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';

const shape = idShape();
const CORPUS_DOTFILES = ['.gitattributes', '.gitignore', '.p-e-relay', '.state'];

async function recordNames(corpus: string): Promise<string[]> {
  return (await readdir(corpus)).filter((name) => shape.parseRecordId(name) !== null).sort();
}

function contiguous(count: number): string[] {
  return Array.from({ length: count }, (_, i) => shape.format(i + 1));
}

test('4 serve processes × 50 concurrent appends: relay-0001…relay-0200, every file whole, nothing stray', async (t) => {
  const { corpus } = await tempStore(t);
  const clients = await Promise.all([0, 1, 2, 3].map(() => stdioClient(t, corpus).then((c) => c.client)));
  const sent = new Map<string, string>(); // id → digest of the bytes sent
  await Promise.all(
    clients.flatMap((client, p) =>
      Array.from({ length: 50 }, async (_, i) => {
        const bytes = record({ kind: 'note', from: `agent-${p}` }, `process ${p}, append ${i}`);
        const result = (await client.callTool({ name: 'append_relay', arguments: { bytes } })) as CallToolResult;
        assert.notEqual(result.isError, true, textOf(result));
        const { id, digest } = result.structuredContent as { id: string; digest: string };
        assert.equal(digest, digestOf(Buffer.from(bytes)));
        assert.ok(!sent.has(id), `${id} was handed out twice`);
        sent.set(id, digest);
      }),
    ),
  );
  assert.deepEqual([...sent.keys()].sort(), contiguous(200));
  assert.deepEqual(await recordNames(corpus), contiguous(200));
  for (const [id, digest] of sent) assert.equal(splitRecordFile(await readFile(path.join(corpus, id))).deposit.digest, digest, id);
  const report = await verifyCorpus(corpus);
  assert.equal(report.checked, 200);
  assert.deepEqual(report.damaged, []);
  assert.deepEqual(await readdir(corpusPaths(corpus).tmp), [], 'nothing left in .state/tmp');
  assert.deepEqual((await readdir(corpus)).filter((name) => shape.parseRecordId(name) === null).sort(), CORPUS_DOTFILES, 'no stray names in the corpus');
  for (const client of clients) {
    const listed = (await client.callTool({ name: 'list_relays', arguments: {} })).structuredContent as { present: string[] };
    assert.equal(listed.present.length, 200, 'every process indexed every record');
  }
});

test('a waiter in one serve process is woken by an append in another', async (t) => {
  const { corpus } = await tempStore(t);
  const { client: waiter } = await stdioClient(t, corpus);
  const { client: writer } = await stdioClient(t, corpus);
  const pending = waiter.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 20_000 } });
  await writer.callTool({ name: 'append_relay', arguments: { bytes: record({ kind: 'ping', to: 'waiter' }) } });
  const result = (await pending).structuredContent as { appeared: { id: string; kind: string; to: string }[]; timedOut: boolean };
  assert.equal(result.timedOut, false);
  assert.deepEqual(result.appeared.map((r) => [r.id, r.kind, r.to]), [['relay-0001', 'ping', 'waiter']]);
});

// ---- crashes ----------------------------------------------------------------------

interface Answered {
  id: string;
  digest: string;
}

/**
 * A `serve` process driven with raw JSON-RPC (we need its ChildProcess to
 * SIGKILL it), appending in a loop with `inFlight` calls always outstanding,
 * so a kill at any moment lands in the middle of appends.
 */
function loopingWriter(corpus: string, name: string, inFlight = 6): { child: ChildProcess; answered: Answered[]; firstAnswer: Promise<void> } {
  const child = spawn(process.execPath, [BIN, 'serve', '--corpus', corpus], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, P_E_RELAY_LOG: 'silent' } });
  const answered: Answered[] = [];
  let next = 10;
  let buffered = '';
  let onFirst: () => void;
  const firstAnswer = new Promise<void>((resolve) => (onFirst = resolve));
  const send = (message: object) => {
    if (child.stdin!.writable) child.stdin!.write(JSON.stringify(message) + '\n');
  };
  const append = () => send({ jsonrpc: '2.0', id: next++, method: 'tools/call', params: { name: 'append_relay', arguments: { bytes: record({ from: name }, `${name} #${next}`) } } });
  child.stdin!.on('error', () => {}); // EPIPE once it is killed
  child.stdout!.on('data', (chunk) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
      const message = JSON.parse(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      if (message.id === 1) for (let i = 0; i < inFlight; i++) append();
      else if (message.result?.structuredContent?.id) {
        answered.push(message.result.structuredContent as Answered);
        onFirst();
        append();
      }
    }
  });
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name, version: '0' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { child, answered, firstAnswer };
}

async function killRound(t: TestContext, corpus: string, round: number): Promise<Answered[]> {
  const writers = [0, 1, 2].map((w) => loopingWriter(corpus, `r${round}w${w}`));
  t.after(() => writers.forEach((w) => w.child.kill('SIGKILL')));
  await Promise.all(writers.map((w) => w.firstAnswer));
  // Each writer dies at its own random moment while appends are in flight.
  await Promise.all(
    writers.map(async (w) => {
      await new Promise((r) => setTimeout(r, Math.random() * 150));
      w.child.kill('SIGKILL');
      await killed(w.child);
    }),
  );
  return writers.flatMap((w) => w.answered);
}

test('writers SIGKILLed mid-append, 5 rounds: every record whole, verify passes, ids never reused', async (t) => {
  const { corpus } = await tempStore(t);
  let highestSeen = 0;
  for (let round = 0; round < 5; round++) {
    const answered = await killRound(t, corpus, round);
    assert.ok(answered.length > 0, `round ${round} appended something`);
    for (const { id } of answered) {
      assert.ok(shape.parse(id)! > highestSeen, `round ${round}: ${id} reuses an id at or below ${shape.format(highestSeen)}, seen before`);
    }
    const report = await verifyCorpus(corpus);
    assert.deepEqual(report.damaged, [], `round ${round}: every visible record is whole`);
    const onDisk = await recordNames(corpus);
    for (const { id, digest } of answered) {
      assert.equal(splitRecordFile(await readFile(path.join(corpus, id))).deposit.digest, digest, `${id} was answered, so it is on disk as sent`);
    }
    assert.deepEqual(onDisk, contiguous(onDisk.length), `round ${round}: no id was skipped`);
    highestSeen = Math.max(highestSeen, shape.parse(onDisk.at(-1)!)!);
  }

  const strays = (await readdir(corpusPaths(corpus).tmp)).length;
  const verify = await runCli(['verify', '--corpus', corpus], { env: { P_E_RELAY_LOG: 'info' } });
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  if (strays > 0) assert.match(verify.stderr, /warn: stray temp file/, 'crash debris is a warning, not a failure');
  assert.match(verify.stdout, new RegExp(`^${highestSeen} records checked, 0 damaged`, 'm'));

  const clean = await runCli(['verify', '--clean', '--corpus', corpus]);
  assert.equal(clean.code, 0, clean.stderr);
  assert.deepEqual(await readdir(corpusPaths(corpus).tmp), [], 'every writer is dead, so --clean removed every temp file');

  const after = await runCli(['append', '--corpus', corpus], { input: record({ kind: 'after-the-crashes' }) });
  assert.equal(after.code, 0, after.stderr);
  assert.equal(after.stdout.trim(), shape.format(highestSeen + 1));
});

// ---- other tools writing into the corpus ----------------------------------------------

test('a record dropped in the rsync way wakes a waiter; dotfiles and other names never become records', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  await client.callTool({ name: 'list_relays', arguments: {} }); // the start-up scan is done
  const junk = ['.relay-0006', '.relay-0007.AbC123', 'relay-0008~', 'relay-08', 'RELAY-0009', 'relay-0010.tmp', 'README.md', '#relay-0011#'];
  for (const name of junk) await writeFile(path.join(corpus, name), 'not a record\n');

  const pending = client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 20_000 } });
  await client.callTool({ name: 'exists', arguments: { id: 'relay-0005' } }); // the wait has started
  const bytes = Buffer.from(record({ kind: 'mirrored', from: 'primary', parent: 'relay-0003' }, 'carried by rsync'));
  const file = buildRecordFile({ provenance: 'as-received', depositedBy: 'mcp/scout-7', depositedAt: new Date().toISOString(), digest: digestOf(bytes) }, bytes);
  // rsync writes .NAME.XXXXXX in the target directory, then renames it over NAME.
  const temp = path.join(corpus, '.relay-0005.x7Kq2Z');
  await writeFile(temp, file);
  await rename(temp, path.join(corpus, 'relay-0005'));

  const result = (await pending).structuredContent as { appeared: { id: string; kind: string; depositedBy: string }[] };
  assert.deepEqual(result.appeared.map((r) => [r.id, r.kind, r.depositedBy]), [['relay-0005', 'mirrored', 'mcp/scout-7']]);
  const listed = await client.callTool({ name: 'list_relays', arguments: {} });
  assert.equal(textOf(listed), 'present (1): relay-0005\nknown missing (1): relay-0003');
  const got = await client.callTool({ name: 'get_relay', arguments: { id: 'relay-0005' } });
  assert.deepEqual(Buffer.from(textOf(got)), file);
  const verify = await verifyCorpus(corpus);
  assert.equal(verify.checked, 1, 'verify, too, looks only at id-shaped names');
});
