/**
 * Exactly once across processes and doors (spec §8b): two stdio servers
 * racing one key, a restart between a call and its retry, and the REST
 * door's Idempotency-Key header. Real SDK clients over real stdio pipes to
 * the bundle, real HTTP on loopback.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { errorCode, record, runCli, stdioClient, tempStore, textOf } from '../../support/helpers.js';
import { sign, startTestHub } from '../../support/http-helpers.js';

interface Appended {
  id: string;
  digest: string;
  depositedBy: string;
  depositedAt: string;
  replayed?: true;
}

async function recordFiles(corpus: string): Promise<string[]> {
  return (await readdir(corpus)).filter((name) => /^relay-\d{4}$/.test(name)).sort();
}

function appended(result: unknown): Appended {
  const r = result as CallToolResult;
  assert.ok(!r.isError, textOf(r));
  return r.structuredContent as unknown as Appended;
}

test('two stdio servers racing the same key, 100 rounds: one record per key, the other call answered replayed', async (t) => {
  const { corpus } = await tempStore(t);
  const [a, b] = await Promise.all([stdioClient(t, corpus), stdioClient(t, corpus)]);
  const ROUNDS = 100;
  for (let round = 0; round < ROUNDS; round++) {
    const args = { bytes: record({ kind: 'note', from: 'racer' }, `round ${round}`), idempotency_key: `race-${round}` };
    const [x, y] = (await Promise.all([a.client.callTool({ name: 'append_relay', arguments: args }), b.client.callTool({ name: 'append_relay', arguments: args })])).map(appended);
    assert.equal(x!.id, y!.id, `round ${round}: both answers name one record`);
    assert.equal(x!.digest, y!.digest);
    assert.equal(x!.depositedAt, y!.depositedAt, `round ${round}: the repeat carries the first record's deposit facts`);
    assert.equal([x, y].filter((r) => r!.replayed === true).length, 1, `round ${round}: exactly one call stored it`);
  }
  const files = await recordFiles(corpus);
  assert.equal(files.length, ROUNDS, 'one record per key, never two');
  // Every claim was finished: only done marks remain, nothing in flight.
  const marks = await readdir(path.join(corpus, '.state', 'idempotency'));
  assert.equal(marks.filter((m) => m.endsWith('.done')).length, ROUNDS);
  assert.deepEqual(marks.filter((m) => !m.endsWith('.done')), []);
  assert.deepEqual(await readdir(path.join(corpus, '.state', 'tmp')), [], 'no temp file left behind');
});

test('a retry after the server restarted (a lost answer) answers the first record; other bytes are a conflict naming it', async (t) => {
  const { corpus } = await tempStore(t);
  const args = { bytes: record({ kind: 'question', from: 'asker', to: 'scout-7' }, 'which route?'), idempotency_key: 'restart-1' };
  const first = await stdioClient(null, corpus);
  const stored = appended(await first.client.callTool({ name: 'append_relay', arguments: args }));
  await first.client.close();

  const second = await stdioClient(t, corpus);
  const again = appended(await second.client.callTool({ name: 'append_relay', arguments: args }));
  assert.deepEqual(again, { ...stored, replayed: true });
  const text = textOf(await second.client.callTool({ name: 'append_relay', arguments: args }));
  assert.match(text, new RegExp(`already stored as ${stored.id}`));

  const conflict = await second.client.callTool({ name: 'append_relay', arguments: { ...args, bytes: record({ kind: 'question' }, 'another question') } });
  assert.equal(conflict.isError, true);
  assert.equal(errorCode(conflict), 'idempotency_conflict');
  assert.match(textOf(conflict), new RegExp(stored.id));
  assert.equal(conflict.structuredContent, undefined, 'a refusal carries no structuredContent');
  assert.deepEqual(await recordFiles(corpus), [stored.id]);
});

test('an append_relay idempotency_key that is not 1-200 printable ASCII is refused bad_idempotency_key', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  const result = await client.callTool({ name: 'append_relay', arguments: { bytes: record(), idempotency_key: 'x'.repeat(201) } });
  assert.equal(errorCode(result), 'bad_idempotency_key');
  assert.deepEqual(await recordFiles(corpus), []);
});

test('REST: Idempotency-Key stores once; a repeat answers 200 with the first record; other bytes under it are another record (the key is bound to the bytes)', async (t) => {
  const h = await startTestHub(t);
  const key = await h.key('scout-7');
  // A retry signs afresh (each signature is accepted once): a later second each time.
  let tries = 0;
  const post = (body: string, idempotencyKey: string) =>
    fetch(`${h.url}/relays`, { method: 'POST', headers: { Authorization: sign('scout-7', key, 'POST', body, Date.now() + 1000 * tries++), 'Idempotency-Key': idempotencyKey, Accept: 'application/json' }, body });
  const body = record({ kind: 'note', from: 'scout-7' }, 'via curl');
  const created = await post(body, 'rest-1');
  assert.equal(created.status, 201);
  const first = (await created.json()) as Appended;
  assert.equal(first.depositedBy, 'http/scout-7');

  const repeat = await post(body, 'rest-1');
  assert.equal(repeat.status, 200);
  assert.equal(repeat.headers.get('location'), `/relays/${first.id}`);
  assert.deepEqual(await repeat.json(), { ...first, replayed: true });

  // The header is not signed: a key a proxy put on another request must not refuse this one.
  const other = await post(record({ kind: 'note' }, 'different'), 'rest-1');
  assert.equal(other.status, 201);
  const second = (await other.json()) as Appended;
  assert.notEqual(second.id, first.id);

  const head = (await readFile(path.join(h.corpus, first.id), 'utf8')).split('\n---\n')[0];
  assert.match(head!, /\nidempotency-key: rest-1$/);
  assert.deepEqual(await recordFiles(h.corpus), [first.id, second.id]);
});

test('REST: an answer re-sent in other words is one record, refused idempotency_conflict as over /mcp; a header key stays bound', async (t) => {
  const h = await startTestHub(t);
  const key = await h.key('scout-7');
  let tries = 0;
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${h.url}/relays`, { method: 'POST', headers: { Authorization: sign('scout-7', key, 'POST', body, Date.now() + 1000 * tries++), Accept: 'application/json', ...headers }, body });
  const question = (await (await post(record({ kind: 'question', from: 'scout-7', to: 'all' }, 'which route?'))).json()) as Appended;
  // A proxy wrote scout-7's answer key onto a note: bound to the note's bytes, it keeps nothing from the real answer.
  const note = await post(record({ kind: 'note', from: 'scout-7' }, 'a note'), { 'Idempotency-Key': `scout-7/answer/${question.id}` });
  assert.equal(note.status, 201);
  const answer = record({ kind: 'answer', from: 'scout-7', parent: question.id }, 'the north pass');
  const stored = await post(answer);
  assert.equal(stored.status, 201);
  const first = (await stored.json()) as Appended;
  const again = await post(answer);
  assert.equal(again.status, 200);
  assert.deepEqual(await again.json(), { ...first, replayed: true });
  const reworded = await post(record({ kind: 'answer', from: 'scout-7', parent: `${question.id} (the pass)` }, 'the north pass, I think'));
  const refusal = (await reworded.json()) as { error: string; message: string };
  assert.equal(reworded.status, 409, JSON.stringify(refusal));
  assert.equal(refusal.error, 'idempotency_conflict');
  assert.match(refusal.message, new RegExp(first.id));
  // The same key sent in the header, as a client may: the same one record.
  const headerKeyed = await post(record({ kind: 'answer', from: 'scout-7', parent: question.id }, 'other words again'), { 'Idempotency-Key': `scout-7/answer/${question.id}` });
  assert.equal(headerKeyed.status, 409);
  assert.equal((await recordFiles(h.corpus)).length, 3, 'the question, the note and one answer');
});

test('REST: an Idempotency-Key over 200 characters is refused 400 bad_idempotency_key', async (t) => {
  const h = await startTestHub(t);
  const key = await h.key('scout-7');
  const body = record();
  const response = await fetch(`${h.url}/relays`, { method: 'POST', headers: { Authorization: sign('scout-7', key, 'POST', body), 'Idempotency-Key': 'k'.repeat(201) }, body });
  assert.equal(response.status, 400);
  assert.equal(((await response.json()) as { error: string }).error, 'bad_idempotency_key');
});

test('CLI: append --idempotency-key run twice prints the same id and stores one record; other bytes exit 1 naming it', async (t) => {
  const { corpus } = await tempStore(t);
  const args = ['append', '--corpus', corpus, '--idempotency-key', 'cli-1'];
  const env = { USER: 'alice' };
  const first = await runCli(args, { input: record({ kind: 'note' }, 'from a script'), env });
  assert.equal(first.code, 0, first.stderr);
  const again = await runCli(args, { input: record({ kind: 'note' }, 'from a script'), env });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, first.stdout);
  assert.match(again.stderr, /already stored as relay-0001/);
  const other = await runCli(args, { input: record({ kind: 'note' }, 'something else'), env });
  assert.equal(other.code, 1);
  assert.match(other.stderr, /idempotency key "cli-1" was already used on this channel \(cli\/alice\) for relay-0001/);
  assert.deepEqual(await recordFiles(corpus), ['relay-0001']);
  assert.match((await readFile(path.join(corpus, 'relay-0001'), 'utf8')).split('\n---\n')[0]!, /\nidempotency-key: cli-1$/);
});
