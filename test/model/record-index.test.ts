import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Deposit } from '../../lib/model/deposit.js';
import type { RecordClaims } from '../../lib/model/record.js';
import { RecordIndex } from '../../lib/model/record-index.js';

const DEPOSIT: Deposit = { provenance: 'as-received', depositedBy: 'mcp', depositedAt: '2026-11-30T00:00:00.000Z', digest: 'sha256:00' };

function claims(named: number[] = [], extra: Partial<RecordClaims> = {}): RecordClaims {
  return { kind: null, from: null, to: null, parent: named[0] ?? null, named, ...extra };
}

/** An index holding `n → named ids`, added in the order given. */
function indexOf(entries: [number, number[]][]): RecordIndex {
  const index = new RecordIndex();
  for (const [n, named] of entries) index.add(n, DEPOSIT, claims(named));
  return index;
}

test('an empty index knows nothing: every id is UNKNOWN, highest is 0', () => {
  const index = new RecordIndex();
  assert.equal(index.size, 0);
  assert.equal(index.highest, 0);
  assert.equal(index.state(1), 'UNKNOWN');
  assert.equal(index.state(null), 'UNKNOWN', 'a malformed id (null) is UNKNOWN');
  assert.deepEqual(index.presentAfter(0), []);
  assert.deepEqual(index.knownMissingAfter(0), []);
});

test('held ids are PRESENT; ids they name and that are not held are KNOWN_MISSING; the rest UNKNOWN', () => {
  const index = indexOf([[1, []], [3, [2, 7]]]);
  assert.equal(index.state(1), 'PRESENT');
  assert.equal(index.state(3), 'PRESENT');
  assert.equal(index.state(2), 'KNOWN_MISSING');
  assert.equal(index.state(7), 'KNOWN_MISSING');
  assert.equal(index.state(4), 'UNKNOWN');
  assert.ok(index.isKnownMissing(7));
  assert.ok(!index.isKnownMissing(1));
  assert.ok(!index.isKnownMissing(4));
});

test('a KNOWN_MISSING id becomes PRESENT once it is held', () => {
  const index = indexOf([[3, [2]]]);
  index.add(2, DEPOSIT, claims());
  assert.equal(index.state(2), 'PRESENT');
  assert.deepEqual(index.knownMissingAfter(0), []);
});

test('adding a held id again changes nothing and says so', () => {
  const index = indexOf([[1, []]]);
  assert.equal(index.add(1, DEPOSIT, claims([5])), false);
  assert.equal(index.state(5), 'UNKNOWN');
  assert.equal(index.size, 1);
});

test('presentAfter is exclusive and ascending, whatever order ids arrive in', () => {
  const index = indexOf([[5, []], [2, []], [9, []], [1, []], [7, []]]);
  assert.deepEqual(index.presentAfter(0), [1, 2, 5, 7, 9]);
  assert.deepEqual(index.presentAfter(2), [5, 7, 9]);
  assert.deepEqual(index.presentAfter(3), [5, 7, 9]);
  assert.deepEqual(index.presentAfter(9), []);
});

test('knownMissingAfter is exclusive and ascending', () => {
  const index = indexOf([[10, [8, 3, 12]], [11, [5]]]);
  assert.deepEqual(index.knownMissingAfter(0), [3, 5, 8, 12]);
  assert.deepEqual(index.knownMissingAfter(5), [8, 12]);
});

test('repliesTo lists held records naming an id in parent or ref, one level, ascending', () => {
  const index = indexOf([[1, []], [4, [1]], [2, [1]], [3, [2, 1]], [5, [4]]]);
  assert.deepEqual(index.repliesTo(1), [2, 3, 4]);
  assert.deepEqual(index.repliesTo(2), [3]);
  assert.deepEqual(index.repliesTo(5), []);
});

test('highest follows held ids and noteIssued, and never goes down', () => {
  const index = indexOf([[3, []]]);
  assert.equal(index.highest, 3);
  index.noteIssued(8);
  assert.equal(index.highest, 8);
  index.noteIssued(5);
  assert.equal(index.highest, 8);
  index.add(4, DEPOSIT, claims());
  assert.equal(index.highest, 8);
});

test('remove drops a vanished record and what it named, but keeps the high-water mark', () => {
  const index = indexOf([[1, []], [2, [1, 9]]]);
  assert.equal(index.remove(2), true);
  assert.equal(index.remove(2), false, 'a second remove changes nothing');
  assert.equal(index.state(2), 'UNKNOWN');
  assert.equal(index.state(9), 'UNKNOWN', 'nothing held names 9 any more');
  assert.deepEqual(index.repliesTo(1), []);
  assert.deepEqual(index.presentAfter(0), [1]);
  assert.equal(index.highest, 2, 'ids are never reused');
});

test('a vanished record whose id is still named becomes KNOWN_MISSING', () => {
  const index = indexOf([[1, []], [2, [1]]]);
  index.remove(1);
  assert.equal(index.state(1), 'KNOWN_MISSING');
});

test('a damaged record is held (PRESENT) with no metadata and names nothing', () => {
  const index = new RecordIndex();
  assert.equal(index.add(4, null, null), true);
  assert.equal(index.state(4), 'PRESENT');
  assert.equal(index.get(4)?.meta, null);
  assert.deepEqual(index.knownMissingAfter(0), []);
});

test('metadata carries the claims and the deposit of a whole record', () => {
  const index = new RecordIndex();
  index.add(6, DEPOSIT, claims([], { kind: 'note', from: 'a', to: 'b' }));
  assert.deepEqual(index.get(6)?.meta, { id: 'relay-0006', kind: 'note', from: 'a', to: 'b', parent: null, refs: [], depositedBy: 'mcp', provenance: 'as-received', depositedAt: DEPOSIT.depositedAt, digest: DEPOSIT.digest });
});

test('heldIds lists every held id', () => {
  const index = indexOf([[2, []], [1, []]]);
  assert.deepEqual([...index.heldIds()].sort(), [1, 2]);
});
