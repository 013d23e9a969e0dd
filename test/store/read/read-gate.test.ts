/**
 * Concurrent reads are bounded: however many reads
 * arrive at once, one process holds at most the gate's number of record
 * files open, and every read is still answered.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { ReadGate } from '../../../lib/store/read/read-gate.js';
import { openTempStore, record } from '../../support/helpers.js';

test('the read gate runs at most its limit at once, and every piece of work in arrival order', async () => {
  const gate = new ReadGate(3);
  let running = 0;
  let peak = 0;
  const started: number[] = [];
  const work = (i: number) =>
    gate.run(async () => {
      started.push(i);
      peak = Math.max(peak, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      return i;
    });
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => work(i)));
  assert.deepEqual(results, Array.from({ length: 20 }, (_, i) => i));
  assert.deepEqual(started, Array.from({ length: 20 }, (_, i) => i));
  assert.equal(peak, 3);
  assert.equal(gate.inFlight, 0);
});

test('a failing read frees its place', async () => {
  const gate = new ReadGate(1);
  await assert.rejects(gate.run(() => Promise.reject(new Error('boom'))), /boom/);
  assert.equal(await gate.run(async () => 'next'), 'next');
  assert.equal(gate.inFlight, 0);
});

test('400 reads at once hold no more record files open than the gate allows, and all are answered', async (t) => {
  const limit = 16;
  const store = await openTempStore(t, { concurrentReads: limit, watch: 'none' });
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push((await store.append(Buffer.from(record({ from: 'a' }, 'x'.repeat(60_000))), { depositedBy: 'mcp' })).id);
  const openFds = () => readdirSync('/proc/self/fd').length;
  const before = openFds();
  let peak = before;
  // Sample on every turn of the event loop while the burst runs.
  let sampling = true;
  const sample = () => {
    peak = Math.max(peak, openFds());
    if (sampling) setImmediate(sample);
  };
  sample();
  const files = await Promise.all(Array.from({ length: 400 }, (_, i) => store.read(ids[i % ids.length]!)));
  sampling = false;
  assert.equal(files.length, 400);
  for (const file of files) assert.ok(file.length > 60_000);
  // A handful of fds come and go beside the reads (the sampler's own readdir among them).
  assert.ok(peak - before <= limit + 8, `peak open fds ${peak} against ${before} before the burst (gate ${limit})`);
});
