import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_ID_WIDTH, idShape, idsIn, nextFreeId } from '../../lib/model/ids.js';

const four = idShape();

test('the default shape is relay- and four digits, relay-0001 … relay-9999', () => {
  assert.equal(four.width, DEFAULT_ID_WIDTH);
  assert.equal(four.max, 9999);
  assert.equal(four.format(1), 'relay-0001');
  assert.equal(four.format(9999), 'relay-9999');
  assert.equal(four.parse('relay-0001'), 1);
  assert.equal(four.parse('relay-9999'), 9999);
});

test('format and parse round-trip every width', () => {
  for (const width of [4, 5, 6, 9]) {
    const shape = idShape(width);
    for (const n of [0, 1, 33, shape.max]) assert.equal(shape.parse(shape.format(n)), n);
    assert.equal(shape.format(7).length, 'relay-'.length + width);
  }
});

test('string order of ids equals number order (fixed width)', () => {
  const ids = [1, 2, 9, 10, 99, 100, 999, 1000, 9999].map(four.format);
  assert.deepEqual([...ids].sort(), ids);
});

for (const malformed of ['relay-33', 'RELAY-0033', 'Relay-0033', 'relay-0033 ', ' relay-0033', 'relay-0033\n', '../x', 'relay-00033', 'relay-003a', 'relay-+033', 'relay-0x21', 'relay_0033', 'relay-', '', 'relay-٠٠٣٣']) {
  test(`${JSON.stringify(malformed)} is not an id: parse and parseRecordId give null`, () => {
    assert.equal(four.parse(malformed), null);
    assert.equal(four.parseRecordId(malformed), null);
  });
}

test('non-strings are not ids', () => {
  for (const value of [33, null, undefined, {}, ['relay-0033']]) {
    assert.equal(four.parse(value), null);
    assert.equal(four.parseRecordId(value), null);
  }
});

test('relay-0000 is a valid mark ("from the start") but not a record id', () => {
  assert.equal(four.parse('relay-0000'), 0);
  assert.equal(four.parseRecordId('relay-0000'), null);
});

test('a wider store (idShape(6)) takes only six-digit ids', () => {
  const six = idShape(6);
  assert.equal(six.max, 999_999);
  assert.equal(six.format(33), 'relay-000033');
  assert.equal(six.parseRecordId('relay-000033'), 33);
  assert.equal(six.parseRecordId('relay-0033'), null, 'a four-digit id is not an id of a six-digit store');
  assert.equal(four.parseRecordId('relay-000033'), null, 'and the other way round');
  assert.equal(six.parse('relay-000000'), 0);
  assert.equal(six.parseRecordId('relay-000000'), null);
  assert.equal(six.example, 'relay-000033');
  assert.match(six.describe, /6 digits/);
});

test('widths outside 4…9 are refused', () => {
  for (const width of [3, 10, 0, -1, 4.5, Number.NaN]) assert.throws(() => idShape(width), RangeError);
});

test('nextFreeId is one past the highest', () => {
  assert.equal(nextFreeId(0, 9999), 1);
  assert.equal(nextFreeId(41, 9999), 42);
});

test('nextFreeId is null when the id space is exhausted', () => {
  assert.equal(nextFreeId(9998, 9999), 9999);
  assert.equal(nextFreeId(9999, 9999), null);
});

test('idsIn finds ids separated by spaces and commas, ignoring other tokens', () => {
  assert.deepEqual(idsIn('relay-0007 relay-0009', four), [7, 9]);
  assert.deepEqual(idsIn('relay-0007,relay-0009', four), [7, 9]);
  assert.deepEqual(idsIn(' relay-0007 ,  relay-0009,,relay-0010\trelay-0011 ', four), [7, 9, 10, 11]);
  assert.deepEqual(idsIn('relay-33 RELAY-0034 relay-0000 ../x relay-0035', four), [35]);
  assert.deepEqual(idsIn('', four), []);
});
