import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { buildRecordFile, digestOf, splitRecordFile, type Deposit } from '../../lib/model/deposit.js';
import { RelayError } from '../../lib/errors.js';
import { tempDir } from '../support/helpers.js';

const RECORD = Buffer.from('@p-e/x0\nkind: reply\nfrom: scout-7\nparent: relay-0012\n\nFree text body.\n---\nnot a separator any more\n');

function deposit(record: Buffer, over: Partial<Deposit> = {}): Deposit {
  return { provenance: 'as-received', depositedBy: 'mcp/scout-7', depositedAt: '2026-11-30T01:02:03.456Z', digest: digestOf(record), ...over };
}

function damaged(file: Buffer): RelayError {
  let caught: unknown;
  assert.throws(() => splitRecordFile(file), (err) => ((caught = err), true));
  assert.ok(caught instanceof RelayError);
  assert.equal(caught.code, 'damaged');
  return caught;
}

test('digestOf is sha256: and 64 lowercase hex of the bytes', () => {
  assert.equal(digestOf(Buffer.from('')), 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.match(digestOf(RECORD), /^sha256:[0-9a-f]{64}$/);
});

test('buildRecordFile writes the four header lines, ---, then the record byte for byte', () => {
  const file = buildRecordFile(deposit(RECORD), RECORD);
  const head = `provenance: as-received\ndeposited-by: mcp/scout-7\ndeposited-at: 2026-11-30T01:02:03.456Z\ndigest: ${digestOf(RECORD)}\n---\n`;
  assert.equal(file.subarray(0, head.length).toString(), head);
  assert.deepEqual(file.subarray(head.length), RECORD);
});

test('the deposit header round-trips through splitRecordFile', () => {
  for (const provenance of ['as-received', 'authored'] as const) {
    const d = deposit(RECORD, { provenance, depositedBy: 'cli/alice' });
    const split = splitRecordFile(buildRecordFile(d, RECORD));
    assert.deepEqual(split.deposit, d);
    assert.deepEqual(split.record, RECORD);
  }
});

test('a record with CRLF, no final newline or an empty body round-trips exactly', () => {
  for (const text of ['@p-e/x0\r\nkind: note\r\n\r\nbody\r\n', '@p-e/x0', '@p-e/x0\n\n---\n---']) {
    const record = Buffer.from(text);
    assert.deepEqual(splitRecordFile(buildRecordFile(deposit(record), record)).record, record);
  }
});

test('a file with no --- line is damaged', () => {
  const file = buildRecordFile(deposit(RECORD), RECORD);
  damaged(Buffer.from(file.toString().replace('\n---\n', '\n')));
  damaged(Buffer.from('provenance: as-received'));
  damaged(Buffer.alloc(0));
});

for (const key of ['provenance', 'deposited-by', 'deposited-at', 'digest']) {
  test(`a file whose header lacks ${key} is damaged`, () => {
    const file = buildRecordFile(deposit(RECORD), RECORD).toString();
    const without = file.split('\n').filter((line) => !line.startsWith(`${key}: `)).join('\n');
    damaged(Buffer.from(without));
  });
}

test('a header line that is not "key: value" makes the file damaged', () => {
  const file = buildRecordFile(deposit(RECORD), RECORD).toString();
  damaged(Buffer.from('garbage\n' + file));
});

test('an unknown provenance makes the file damaged', () => {
  damaged(buildRecordFile(deposit(RECORD, { provenance: 'trust-me' as never }), RECORD));
});

test('an edited byte in the record makes the file damaged', () => {
  const file = buildRecordFile(deposit(RECORD), RECORD);
  const edited = Buffer.from(file);
  edited[edited.length - 3] = edited[edited.length - 3]! ^ 0x20;
  const err = damaged(edited);
  assert.match(String(err.details.why), /digest/);
});

test('a truncated file (a half-written record) is damaged', () => {
  const file = buildRecordFile(deposit(RECORD), RECORD);
  damaged(file.subarray(0, file.length - 5));
});

test('an edited digest makes the file damaged', () => {
  const wrong = digestOf(Buffer.from('something else'));
  damaged(buildRecordFile(deposit(RECORD, { digest: wrong }), RECORD));
});

test("the digest equals `sed '1,/^---$/d' FILE | sha256sum` (real sed and sha256sum)", async (t) => {
  const dir = await tempDir(t);
  // A record that itself contains a --- line and CRLF: only the first --- ends the header.
  const record = Buffer.from('@p-e/x0\r\nkind: note\r\n\r\nline one\n---\nline three, no final newline');
  const d = deposit(record);
  const file = path.join(dir, 'relay-0042');
  await writeFile(file, buildRecordFile(d, record));
  const out = execFileSync('sh', ['-c', `sed '1,/^---$/d' "$1" | sha256sum`, 'sh', file], { encoding: 'utf8' });
  assert.equal(`sha256:${out.split(' ')[0]}`, d.digest);
});

test('an idempotency key is written after digest: and before ---, and read back', () => {
  const d = deposit(RECORD, { idempotencyKey: 'k-7f3a 01' });
  const file = buildRecordFile(d, RECORD);
  const head = `provenance: as-received\ndeposited-by: mcp/scout-7\ndeposited-at: 2026-11-30T01:02:03.456Z\ndigest: ${digestOf(RECORD)}\nidempotency-key: k-7f3a 01\n---\n`;
  assert.equal(file.subarray(0, head.length).toString(), head);
  assert.deepEqual(splitRecordFile(file).deposit, d);
});

test('a deposit key this version does not know is ignored, and the four required keys still decide', () => {
  const file = buildRecordFile(deposit(RECORD), RECORD).toString().replace('\n---\n', '\nmirrored-from: hub-2\n---\n');
  assert.deepEqual(splitRecordFile(Buffer.from(file)).deposit, deposit(RECORD));
});
