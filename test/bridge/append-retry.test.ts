import assert from 'node:assert/strict';
import test from 'node:test';
import { withIdempotencyKey } from '../../lib/bridge/append-retry.js';

const answer = (kindLine: string) => `@p-e/x0\n${kindLine}\nfrom: ana\nparent: relay-0007\n\nyes`;

test('an unkeyed answer goes through the bridge unkeyed, whatever the case of its kind: the hub keys it by its parsed question id', () => {
  for (const kindLine of ['kind: answer', 'Kind: Answer', 'KIND: answer']) {
    const args = withIdempotencyKey('append_relay', { bytes: answer(kindLine) }, 'ana');
    assert.equal(args?.idempotency_key, undefined, kindLine);
  }
});

test('an answer whose parent: holds more than its id is not keyed by that text through the bridge, nor through a hub of another id width', () => {
  for (const parent of ['relay-0007 (re: the pass \u2014 thanks)', 'relay-00007', 'x'.repeat(300) + ' relay-0007']) {
    const args = withIdempotencyKey('append_relay', { bytes: `@p-e/x0\nkind: answer\nparent: ${parent}\n\nyes` }, 'ana');
    assert.equal(args?.idempotency_key, undefined, parent);
  }
});

test('any other unkeyed append through the bridge gets the key of its bytes, as the hub keys it, and a key sent is kept', () => {
  const bytes = '@p-e/x0\nkind: note\nparent: relay-0007\n\nhi';
  const note = withIdempotencyKey('append_relay', { bytes }, 'ana');
  assert.match(String(note?.idempotency_key), /^sha256\/[0-9a-f]{64}$/);
  assert.equal(withIdempotencyKey('append_relay', { bytes }, 'ana')?.idempotency_key, note?.idempotency_key, 'the same bytes, the same key');
  const noId = withIdempotencyKey('append_relay', { bytes: '@p-e/x0\nkind: answer\nparent: the pass\n\nhi' }, 'ana');
  assert.match(String(noId?.idempotency_key), /^sha256\/[0-9a-f]{64}$/, 'an answer naming no id is no answer to the hub: it is keyed here');
  const kept = withIdempotencyKey('append_relay', { bytes: answer('kind: answer'), idempotency_key: 'mine' }, 'ana');
  assert.equal(kept?.idempotency_key, 'mine');
});
