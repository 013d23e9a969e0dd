/** A line of the issued log: an id, and what its writer parsed of the record (lib/model/issued-line.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { idShape } from '../../lib/model/ids.js';
import { formatIssuedLine, issuedLineId, MAX_HINTED_LINE, parseIssuedLine, type IssuedHint } from '../../lib/model/issued-line.js';

const shape = idShape(4);
const hint: IssuedHint = {
  claims: { kind: 'answer', from: 'ana', to: 'bo, cy', parent: 7, named: [7, 3] },
  depositedBy: 'mcp/ana',
  idempotencyKey: 'ana/answer/relay-0007',
  agent: 'ana',
};
const parse = (line: string) => parseIssuedLine(line.replace(/\n$/, ''), shape);

test('a line reads back as the id and hint it was written with', () => {
  const line = formatIssuedLine(shape, 42, hint);
  assert.match(line, /^relay-0042 \{.*\}\n$/);
  assert.deepEqual(parse(line), { n: 42, hint });
});

test('a keyed line carries its record\'s digest, which a REST key\'s scope is bound to; an unkeyed one does not', () => {
  const rest: IssuedHint = { ...hint, depositedBy: 'http/ana', digest: `sha256:${'ab'.repeat(32)}` };
  assert.deepEqual(parse(formatIssuedLine(shape, 42, rest)), { n: 42, hint: rest });
  const { idempotencyKey: _key, ...unkeyed } = rest;
  assert.doesNotMatch(formatIssuedLine(shape, 43, unkeyed), /sha256/);
});

test('a line without a hint is the id alone, as older writers wrote it', () => {
  assert.equal(formatIssuedLine(shape, 42), 'relay-0042\n');
  assert.deepEqual(parse('relay-0042'), { n: 42, hint: null });
});

test('what is not ASCII in a claim is escaped, so the line is the same bytes read as latin1 or UTF-8', () => {
  const line = formatIssuedLine(shape, 5, { claims: { kind: null, from: 'zoë', to: '雪', parent: null, named: [] }, depositedBy: 'mcp' });
  assert.match(line, /^[\x20-\x7e]*\n$/);
  assert.deepEqual(parse(Buffer.from(line, 'utf8').toString('latin1'))?.hint?.claims, { kind: null, from: 'zoë', to: '雪', parent: null, named: [] });
});

test('a hint that would make the line longer than the cap is left out: the id alone is written', () => {
  const wide = { ...hint, claims: { ...hint.claims, to: 'x'.repeat(MAX_HINTED_LINE) } };
  assert.equal(formatIssuedLine(shape, 9, wide), 'relay-0009\n');
});

test('a hint that does not parse, or claims what a record cannot, is ignored and the id still counts', () => {
  for (const bad of ['{', '[]', 'null', '{"k":1,"f":null,"t":null,"p":null,"n":[],"b":"mcp"}', '{"k":null,"f":null,"t":null,"p":3,"n":[],"b":"mcp"}',
    '{"k":null,"f":null,"t":null,"p":null,"n":[1.5],"b":"mcp"}', '{"k":null,"f":null,"t":null,"p":null,"n":[123456],"b":"mcp"}', '{"k":null,"f":null,"t":null,"p":null,"n":[]}']) {
    assert.deepEqual(parse(`relay-0003 ${bad}`), { n: 3, hint: null }, bad);
  }
});

test('a line that names no id of this shape is no line', () => {
  for (const bad of ['', 'relay-03', 'relay-00003', 'relay-0000', 'garbage {"k":null}', ' relay-0003']) assert.equal(parse(bad), null, bad);
});

test('the id alone is read without its hint, whatever the hint holds', () => {
  assert.equal(issuedLineId(formatIssuedLine(shape, 42, hint).trimEnd(), shape), 42);
  assert.equal(issuedLineId('relay-0003 {', shape), 3);
  assert.equal(issuedLineId('relay-03 {}', shape), null);
});
