/**
 * Writers killed with SIGKILL in the middle of appends, round after round:
 * stdio servers and an HTTP hub with appends in flight, and CLI appends of
 * near-limit (~1 MiB) records killed mid-write. After every round each
 * visible record is whole, every answered append is on disk byte for byte,
 * no id is skipped or reused; at the end `verify` passes, reports the stray
 * temp files the kills left, and `verify --clean` removes only those whose
 * writer is dead.
 *
 * Short form in `npm test`: 3 rounds. P_E_RELAY_LONG=1: 40 rounds.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { corpusPaths, tempName } from '../../lib/disk/paths.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../../lib/model/record.js';
import { verifyCorpus } from '../../lib/ops/verify.js';
import { BIN, killed, record, runCli, tempStore } from '../support/helpers.js';
import { sign } from '../support/http-helpers.js';
import { hubProcess, rawStdio, scale } from '../support/reliability-helpers.js';

const shape = idShape();
const ROUNDS = scale(3, 40);

/** A record of exactly `size` bytes (ASCII), unique by its random body. */
function sizedRecord(from: string, size: number): Buffer {
  const head = Buffer.from(record({ kind: 'crash-test', from }, ''));
  const body = randomBytes(size).toString('base64').slice(0, size - head.length);
  return Buffer.concat([head, Buffer.from(body)]);
}

/** Near the 1 MiB limit: every fourth one exactly at it. */
function nearLimit(from: string, i: number): Buffer {
  return sizedRecord(from, i % 4 === 0 ? DEFAULT_MAX_RECORD_BYTES : DEFAULT_MAX_RECORD_BYTES - Math.floor(Math.random() * 4096));
}

interface Answered {
  id: string;
  digest: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stopAfter = (ms: number) => sleep(Math.random() * ms);

/** A stdio server with `inFlight` appends always outstanding (small and near-limit records mixed), until it dies. */
async function stdioWriter(t: TestContext, corpus: string, name: string, answered: Answered[]): Promise<ChildProcess> {
  const server = await rawStdio(t, corpus, { P_E_RELAY_LOG: 'silent' });
  let i = 0;
  const lane = async () => {
    while (server.alive()) {
      const bytes = i++ % 2 === 0 ? nearLimit(name, i) : Buffer.from(record({ from: name }, `${name} #${i}`));
      const answer = await server.request('tools/call', { name: 'append_relay', arguments: { bytes: bytes.toString('utf8') } }).catch(() => null);
      const sc = answer?.result?.structuredContent as Answered | undefined;
      if (sc) answered.push({ id: sc.id, digest: sc.digest });
    }
  };
  for (let k = 0; k < 4; k++) void lane();
  return server.child;
}

/** A hub with signed REST appends of ~60 KiB always in flight. */
async function hubWriter(t: TestContext, corpus: string, keys: string, answered: Answered[]): Promise<ChildProcess> {
  const hub = await hubProcess(t, corpus, keys, { args: ['--append-rate', '100000'], env: { P_E_RELAY_LOG: 'silent' } });
  const key = (await readKey(keys, 'crasher'))!;
  const lane = async () => {
    while (hub.child.exitCode === null && hub.child.signalCode === null) {
      const bytes = sizedRecord('hub', 60_000 + Math.floor(Math.random() * 5000));
      try {
        const res = await fetch(`${hub.url}/relays`, { method: 'POST', body: bytes, headers: { Authorization: sign('crasher', key, 'POST', bytes), Accept: 'application/json' } });
        const answer = (await res.json()) as Answered;
        if (res.status === 201) answered.push({ id: answer.id, digest: answer.digest });
      } catch {
        // the hub died under this request: no answer, so nothing is promised
      }
    }
  };
  for (let k = 0; k < 4; k++) void lane();
  return hub.child;
}

/** CLI appends of near-limit records, one process at a time, each killed at a random moment unless it finished first. */
async function cliKiller(corpus: string, rounds: number, answered: Answered[], pids: number[]): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const bytes = nearLimit('cli', i);
    const child = spawn(process.execPath, [BIN, 'append', '--corpus', corpus], { env: { ...process.env, P_E_RELAY_LOG: 'silent' } });
    pids.push(child.pid!);
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stdin.on('error', () => {});
    child.stdin.end(bytes);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const code = await Promise.race([exited, stopAfter(250).then(() => 'kill' as const)]);
    if (code === 'kill') {
      child.kill('SIGKILL');
      await exited;
    }
    // A process that printed its id before the kill landed had answered: it is promised.
    if (stdout.trim()) answered.push({ id: stdout.trim(), digest: digestOf(bytes) });
  }
}

async function recordNames(corpus: string): Promise<string[]> {
  return (await readdir(corpus)).filter((name) => shape.parseRecordId(name) !== null).sort();
}

test(`SIGKILL of writers mid-append (stdio, HTTP, CLI; records up to the 1 MiB limit), ${ROUNDS} rounds: every record whole, nothing answered is lost, verify --clean removes only dead writers' temp files`, { timeout: scale(60_000, 900_000) }, async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'crasher');
  let highestSeen = 0;
  let answeredTotal = 0;
  let strayTotal = 0;
  const deadPids: number[] = [];

  for (let round = 0; round < ROUNDS; round++) {
    const answered: Answered[] = [];
    const writers = await Promise.all([stdioWriter(t, corpus, `r${round}a`, answered), stdioWriter(t, corpus, `r${round}b`, answered), hubWriter(t, corpus, keys, answered)]);
    const cli = cliKiller(corpus, 4, answered, deadPids);
    // Let appends get going, then kill each writer at its own random moment.
    const deadline = Date.now() + 5000;
    while (answered.length < 3 && Date.now() < deadline) await sleep(5);
    await Promise.all(
      writers.map(async (child) => {
        await stopAfter(300);
        deadPids.push(child.pid!);
        child.kill('SIGKILL');
        await killed(child);
      }),
    );
    await cli;
    assert.ok(answered.length > 0, `round ${round} appended something before the kills`);

    const report = await verifyCorpus(corpus);
    assert.deepEqual(report.damaged, [], `round ${round}: every visible record is whole`);
    assert.deepEqual(report.live, [], 'every writer is dead, so no temp file is live');
    strayTotal = report.stray.length;
    for (const { id, digest } of answered) {
      assert.ok(shape.parse(id)! > highestSeen, `round ${round}: ${id} reuses an id at or below ${shape.format(highestSeen)}`);
      const split = splitRecordFile(await readFile(path.join(corpus, id)));
      assert.equal(split.deposit.digest, digest, `${id} was answered, so it is on disk as sent`);
    }
    const onDisk = await recordNames(corpus);
    assert.deepEqual(onDisk, Array.from({ length: onDisk.length }, (_, i) => shape.format(i + 1)), `round ${round}: no id was skipped`);
    highestSeen = onDisk.length;
    answeredTotal += answered.length;
  }

  // verify (the CLI) passes and reports the temp files the kills left behind.
  const verify = await runCli(['verify', '--corpus', corpus], { env: { P_E_RELAY_LOG: 'info' } });
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  assert.match(verify.stdout, new RegExp(`^${highestSeen} records checked, 0 damaged, ${strayTotal} stray temp files`, 'm'));
  assert.equal((verify.stderr.match(/stray temp file \.state\/tmp\//g) ?? []).length, strayTotal, 'each stray temp file is named');

  // A temp file whose writer is alive must survive --clean; dead writers' files go.
  const tmp = corpusPaths(corpus).tmp;
  const live = await rawStdio(t, corpus);
  const liveTemp = tempName(live.child.pid!, 0);
  const deadTemp = tempName(deadPids[0]!, 999);
  await writeFile(path.join(tmp, liveTemp), 'a record being written');
  await writeFile(path.join(tmp, deadTemp), 'left by a crash');
  const clean = await runCli(['verify', '--clean', '--corpus', corpus], { env: { P_E_RELAY_LOG: 'info' } });
  assert.equal(clean.code, 0, clean.stderr);
  assert.match(clean.stdout, new RegExp(`${strayTotal + 1} stray temp files \\(${strayTotal + 1} removed\\)`));
  assert.match(clean.stderr, new RegExp(`temp file \\.state/tmp/${liveTemp} belongs to a running writer; left alone`));
  assert.deepEqual(await readdir(tmp), [liveTemp], 'only the live writer\'s temp file is left');

  // The store goes on from where it was: the next id follows the highest, no reuse.
  const after = await live.request('tools/call', { name: 'append_relay', arguments: { bytes: record({ kind: 'after-the-crashes' }) } });
  assert.equal((after.result?.structuredContent as Answered).id, shape.format(highestSeen + 1));
  t.diagnostic(`rounds survived: ${ROUNDS}; answered appends: ${answeredTotal}, all on disk as sent; records: ${highestSeen}, 0 damaged; stray temp files left by kills: ${strayTotal}, all removed by --clean`);
});
