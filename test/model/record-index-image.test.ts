import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Deposit } from '../../lib/model/deposit.js';
import { RecordIndex } from '../../lib/model/record-index.js';
import { decodeSnapshot, encodeSnapshot } from '../../lib/store/index/index-snapshot.js';

const deposit = (n: number): Deposit => ({
  provenance: n % 3 ? 'as-received' : 'authored',
  depositedBy: `mcp/agent-${n % 4}`,
  // Every fifth record carries texts that do not fit their columns, as a file written by another tool may.
  depositedAt: n % 5 ? new Date(Date.UTC(2026, 0, 1) + n).toISOString() : `yesterday ${n}`,
  digest: n % 5 ? 'sha256:' + n.toString(16).padStart(64, '0') : `sha256:odd-${n}`,
});

function everything(index: RecordIndex, upTo: number): unknown {
  const ids = Array.from({ length: upTo }, (_, k) => k + 1);
  return { size: index.size, highest: index.highest, present: index.presentAfter(0), missing: index.knownMissingAfter(0), entries: ids.map((n) => [index.state(n), index.get(n) ?? null, index.repliesTo(n)]) };
}

// The snapshot stores the index as columns and a new process rebuilds it from
// them: whatever adds and removes made the index, the rebuilt one must answer
// the same (damaged records are left out of the image, and read again).
test('an index written to a snapshot and loaded back answers exactly as the original, whatever made it', () => {
  const op = fc.oneof(
    fc.record({ add: fc.integer({ min: 1, max: 40 }), names: fc.array(fc.integer({ min: 1, max: 45 }), { maxLength: 5 }), parent: fc.boolean(), kind: fc.constantFrom(null, 'note', 'reply', 'ü ✓') }),
    fc.record({ remove: fc.integer({ min: 1, max: 40 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
      const index = new RecordIndex();
      for (const o of ops) {
        if ('add' in o) {
          const parent = o.parent && o.names.length ? o.names[0]! : null;
          index.add(o.add, deposit(o.add), { kind: o.kind, from: `a${o.add % 3}`, to: o.add % 2 ? null : 'b, c', parent, named: [...new Set(o.names)] });
        } else index.remove(o.remove);
      }
      const read = decodeSnapshot(encodeSnapshot({ image: index.toImage(), stamp: null, width: 4, issued: 0, keys: [] }), 4);
      assert.ok('snapshot' in read);
      const loaded = new RecordIndex();
      loaded.load(read.snapshot.image);
      assert.deepEqual(everything(loaded, 45), everything(index, 45));
    }),
  );
});
