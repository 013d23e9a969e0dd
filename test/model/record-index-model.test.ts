import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Deposit } from '../../lib/model/deposit.js';
import { idShape } from '../../lib/model/ids.js';
import { RecordIndex } from '../../lib/model/record-index.js';

const shape = idShape(4);
const deposit: Deposit = { provenance: 'as-received', depositedBy: 'mcp', depositedAt: '2026-11-30T00:00:00.000Z', digest: 'sha256:00' };

// The index keeps its KNOWN_MISSING set up to date as records come and go;
// here it must agree with the definition computed from scratch: named by a
// held record, and not held.
test('KNOWN_MISSING always equals "named by a held record and not held", whatever adds and removes happen', () => {
  const op = fc.oneof(
    fc.record({ add: fc.integer({ min: 1, max: 30 }), names: fc.array(fc.integer({ min: 1, max: 30 }), { maxLength: 4 }) }),
    fc.record({ remove: fc.integer({ min: 1, max: 30 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const index = new RecordIndex();
      const model = new Map<number, number[]>();
      for (const o of ops) {
        if ('add' in o) {
          const claims = { kind: null, from: null, to: null, parent: null, named: o.names };
          if (index.add(o.add, deposit, claims) && !model.has(o.add)) model.set(o.add, o.names);
        } else {
          index.remove(o.remove);
          model.delete(o.remove);
        }
      }
      const expected = [...new Set([...model.values()].flat())].filter((m) => !model.has(m)).sort((a, b) => a - b);
      assert.deepEqual(index.knownMissingAfter(0), expected);
      for (let n = 1; n <= 30; n++) {
        assert.equal(index.isKnownMissing(n), expected.includes(n));
        assert.equal(index.state(n), model.has(n) ? 'PRESENT' : expected.includes(n) ? 'KNOWN_MISSING' : 'UNKNOWN');
      }
    }),
  );
});
