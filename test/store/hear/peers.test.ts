/**
 * lib/store/hear/peers.ts: how a store hears what its peers added, with the
 * issued log and the disk played by the test so that a writer's line can
 * land at the moment that matters.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../lib/log.js';
import { idShape } from '../../../lib/model/ids.js';
import { parseIssuedLine, formatIssuedLine, type IssuedLine } from '../../../lib/model/issued-line.js';
import { parseRecord } from '../../../lib/model/record.js';
import { RecordIndex } from '../../../lib/model/record-index.js';
import { Peers } from '../../../lib/store/hear/peers.js';
import type { CorpusIndexer } from '../../../lib/store/index/corpus-indexer.js';

const shape = idShape();

/** The line a writer notes for relay-0001, as append/issued-log.ts writes it. */
function lineFor(n: number): IssuedLine {
  const claims = parseRecord(Buffer.from('@p-e/x0\nkind: note\nto: bo\n\nfor bo\n'), shape, 65_536);
  return parseIssuedLine(formatIssuedLine(shape, n, { claims, depositedBy: 'mcp' }), shape)!;
}

test("a record found past the log's end is held from its line when the line landed during the look, not read from its file", () => {
  const index = new RecordIndex(shape.format);
  const looks: { n: number; fromLine: boolean }[] = [];
  const indexer = {
    ingestNoted: (n: number, hint: unknown) => void looks.push({ n, fromLine: hint !== undefined }),
    ingest: (n: number) => void looks.push({ n, fromLine: false }),
    mayBeOnDisk: (n: number) => n === 1, // relay-0001 is linked; its writer notes it a moment later
    isSettling: () => false,
  } as unknown as CorpusIndexer;
  const reads: IssuedLine[][] = [[], [lineFor(1)]]; // the first read comes before the writer's line, the second after
  const issued = { readNew: () => reads.shift() ?? [] };
  const peers = new Peers({ index, issued, indexer, shape, log: silentLogger });
  peers.start();
  peers.lookPast();
  assert.deepEqual(looks, [{ n: 1, fromLine: true }]);
  assert.equal(index.highest, 1, 'the id is issued: the next free id is past it');
});
