import assert from 'node:assert/strict';
import test from 'node:test';
import { withIdempotencyKey } from '../../lib/bridge/append-retry.js';

const answer = (kindLine: string) => `@p-e/x0\n${kindLine}\nfrom: ana\nparent: relay-0007\n\nyes`;

test('an unkeyed answer sent through the bridge is keyed as the hub keys it, whatever the case of its kind', () => {
  for (const kindLine of ['kind: answer', 'Kind: Answer', 'KIND: answer']) {
    const args = withIdempotencyKey('append_relay', { bytes: answer(kindLine) }, 'ana');
    assert.equal(args?.idempotency_key, 'ana/answer/relay-0007', kindLine);
  }
});

test('any other unkeyed append through the bridge gets the key of its bytes, as the hub keys it, and a key sent is kept', () => {
  const bytes = '@p-e/x0\nkind: note\nparent: relay-0007\n\nhi';
  const note = withIdempotencyKey('append_relay', { bytes }, 'ana');
  assert.match(String(note?.idempotency_key), /^sha256\/[0-9a-f]{64}$/);
  assert.equal(withIdempotencyKey('append_relay', { bytes }, 'ana')?.idempotency_key, note?.idempotency_key, 'the same bytes, the same key');
  const kept = withIdempotencyKey('append_relay', { bytes: answer('kind: answer'), idempotency_key: 'mine' }, 'ana');
  assert.equal(kept?.idempotency_key, 'mine');
});
