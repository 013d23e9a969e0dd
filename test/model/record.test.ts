import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RelayError } from '../../lib/errors.js';
import { idShape } from '../../lib/model/ids.js';
import { DEFAULT_MAX_RECORD_BYTES, FIRST_LINE, MAX_NAMED_IDS, decodeRecordText, encodeRecordText, parseRecord } from '../../lib/model/record.js';
import { refused } from '../support/refusal.js';

const shape = idShape();
const parse = (text: string | Buffer, max?: number) => parseRecord(typeof text === 'string' ? Buffer.from(text) : text, shape, max);

test('a record with the example headers of docs/format.md yields its claims', () => {
  const claims = parse('@p-e/x0\nkind: reply\nfrom: scout-7\nto: relay-3\nparent: relay-0012\nref: relay-0007 relay-0009\n\nFree text body.');
  assert.deepEqual(claims, { kind: 'reply', from: 'scout-7', to: 'relay-3', parent: 12, named: [12, 7, 9] });
});

test('a record of only the first line is whole, with every claim null', () => {
  for (const text of ['@p-e/x0', '@p-e/x0\n', '@p-e/x0\r\n']) {
    assert.deepEqual(parse(text), { kind: null, from: null, to: null, parent: null, named: [] });
  }
});

for (const [label, text] of [
  ['no first line at all', 'kind: note\n\nhello'],
  ['an empty record', ''],
  ['another version', '@p-e/x1\n\nhello'],
  ['a leading space', ' @p-e/x0\n\nhello'],
  ['a trailing space', '@p-e/x0 \n\nhello'],
  ['a byte order mark', '\uFEFF@p-e/x0\n\nhello'],
  ['a leading empty line', '\n@p-e/x0\n\nhello'],
  ['upper case', '@P-E/X0\n\nhello'],
] as const) {
  test(`a record with ${label} is refused, naming the expected first line`, () => {
    const err = refused(() => parse(text), 'bad_record');
    assert.ok(err.message.includes(FIRST_LINE), err.message);
  });
}

test('CRLF line endings parse like LF', () => {
  const claims = parse('@p-e/x0\r\nkind: note\r\nfrom: a\r\nparent: relay-0002\r\n\r\nbody\r\n');
  assert.deepEqual(claims, { kind: 'note', from: 'a', to: null, parent: 2, named: [2] });
});

test('headers end at the first empty line; lookalikes in the body are not headers', () => {
  const claims = parse('@p-e/x0\nkind: note\n\nfrom: body-text\nref: relay-0001');
  assert.equal(claims.from, null);
  assert.deepEqual(claims.named, []);
});

test('a NUL byte is refused', () => {
  refused(() => parse(Buffer.from('@p-e/x0\n\nbefore\0after')), 'bad_record');
});

test('invalid UTF-8 is refused', () => {
  for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80] /* an encoded surrogate */, [0xc0, 0xaf] /* overlong */]) {
    refused(() => parse(Buffer.concat([Buffer.from('@p-e/x0\n\n'), Buffer.from(bad)])), 'bad_record');
  }
});

test('valid multi-byte UTF-8 is accepted', () => {
  assert.equal(parse('@p-e/x0\nfrom: Zoë 🦊\n\nnaïve').from, 'Zoë 🦊');
});

test('a record over the size limit is refused as too_large; at the limit it is taken', () => {
  const atLimit = Buffer.alloc(100, 'a');
  atLimit.write('@p-e/x0\n\n');
  assert.doesNotThrow(() => parse(atLimit, 100));
  const over = Buffer.concat([atLimit, Buffer.from('a')]);
  const err = refused(() => parse(over, 100), 'too_large');
  assert.equal(err.details.limit, 100);
  assert.equal(err.details.size, 101);
});

test('the default limit is 1 MiB', () => {
  assert.equal(DEFAULT_MAX_RECORD_BYTES, 1024 * 1024);
  const big = Buffer.alloc(DEFAULT_MAX_RECORD_BYTES + 1, 'a');
  big.write('@p-e/x0\n\n');
  refused(() => parse(big), 'too_large');
});

test('the first of a repeated single-valued key wins', () => {
  const claims = parse('@p-e/x0\nkind: first\nkind: second\nfrom: a\nfrom: b\nto: x\nto: y\nparent: relay-0003\nparent: relay-0004\n\n');
  assert.deepEqual(claims, { kind: 'first', from: 'a', to: 'x', parent: 3, named: [3] });
});

test('unknown keys and lines that are not headers are ignored', () => {
  const claims = parse('@p-e/x0\nx-colour: blue\nnot a header line\n: no key\nkind: note\n\n');
  assert.deepEqual(claims, { kind: 'note', from: null, to: null, parent: null, named: [] });
});

test('keys are matched case-insensitively and values trimmed; empty values are null', () => {
  const claims = parse('@p-e/x0\nKind:   note  \nFROM: a\nto:\n\n');
  assert.deepEqual(claims, { kind: 'note', from: 'a', to: null, parent: null, named: [] });
});

test('ref: may repeat and hold several ids separated by spaces or commas', () => {
  const claims = parse('@p-e/x0\nref: relay-0001 relay-0002\nref: relay-0003,relay-0004\nref:relay-0005 ,  relay-0006\n\n');
  assert.deepEqual(claims.named, [1, 2, 3, 4, 5, 6]);
  assert.equal(claims.parent, null);
});

test('parent: names one id: the first of its shape counts', () => {
  assert.equal(parse('@p-e/x0\nparent: relay-0012 relay-0013\n\n').parent, 12);
  assert.deepEqual(parse('@p-e/x0\nparent: relay-0012, relay-0013\n\n').named, [12]);
});

test('only tokens of the store shape count as references', () => {
  const claims = parse('@p-e/x0\nparent: relay-12\nref: RELAY-0001 relay-0000 ../x relay-00002 relay-0007\n\n');
  assert.equal(claims.parent, null);
  assert.deepEqual(claims.named, [7]);
});

test('references follow the store width', () => {
  const six = idShape(6);
  const claims = parseRecord(Buffer.from('@p-e/x0\nparent: relay-000012\nref: relay-0007 relay-000009\n\n'), six);
  assert.equal(claims.parent, 12);
  assert.deepEqual(claims.named, [12, 9]);
});

test('named ids are distinct', () => {
  assert.deepEqual(parse('@p-e/x0\nparent: relay-0001\nref: relay-0001 relay-0002 relay-0002\n\n').named, [1, 2]);
});

test(`at most ${MAX_NAMED_IDS} distinct ids may be named; more is refused as too_many_refs`, () => {
  const ids = (count: number) => Array.from({ length: count }, (_, i) => shape.format(i + 1)).join(' ');
  assert.equal(parse(`@p-e/x0\nref: ${ids(64)}\n\n`).named.length, 64);
  assert.equal(parse(`@p-e/x0\nparent: relay-0001\nref: ${ids(64)}\n\n`).named.length, 64, 'the parent repeated in ref: counts once');
  const err = refused(() => parse(`@p-e/x0\nref: ${ids(65)}\n\n`), 'too_many_refs');
  assert.equal(err.details.limit, 64);
  refused(() => parse(`@p-e/x0\nparent: relay-0100\nref: ${ids(64)}\n\n`), 'too_many_refs');
});

test('decodeRecordText returns the text of valid UTF-8 and refuses NUL', () => {
  assert.equal(decodeRecordText(Buffer.from('héllo')), 'héllo');
  refused(() => decodeRecordText(Buffer.from([0x61, 0x00])), 'bad_record');
});

test('encodeRecordText encodes well-formed text as UTF-8, byte for byte', () => {
  const text = '@p-e/x0\r\nfrom: Zoë 🦊\n\nbody';
  assert.deepEqual(encodeRecordText(text), Buffer.from(text, 'utf8'));
});

test('encodeRecordText refuses a lone surrogate instead of replacing it', () => {
  for (const text of ['@p-e/x0\n\n\uD800', '@p-e/x0\n\n\uDC00x', '@p-e/x0\n\nx\uDBFF', '\uDE00\uD83D']) {
    refused(() => encodeRecordText(text), 'bad_record');
  }
});
