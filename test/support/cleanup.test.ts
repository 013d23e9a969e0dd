import assert from 'node:assert/strict';
import test from 'node:test';
import { cleanup, type Cleanup } from './cleanup.js';

/** A collector standing in for a test context: it keeps the after hooks, to run them as node:test would. */
function collector(): Cleanup & { run(): Promise<void>; hooks: number } {
  const hooks: (() => unknown)[] = [];
  return {
    after: (fn) => void hooks.push(fn),
    get hooks() {
      return hooks.length;
    },
    async run() {
      for (const hook of hooks) await hook();
    },
  };
}

test('cleanups run last registered first, through one after hook', async () => {
  const t = collector();
  const order: string[] = [];
  cleanup(t, () => order.push('remove the directory'));
  cleanup(t, () => order.push('stop the hub'));
  cleanup(t, async () => order.push('close the client'));
  assert.equal(t.hooks, 1);
  await t.run();
  assert.deepEqual(order, ['close the client', 'stop the hub', 'remove the directory']);
});

test('a failing cleanup does not keep the ones before it from running, and its error is thrown at the end', async () => {
  const t = collector();
  const order: string[] = [];
  cleanup(t, () => order.push('stop the servers'));
  cleanup(t, () => {
    throw new Error('ENOTEMPTY');
  });
  await assert.rejects(t.run(), /ENOTEMPTY/);
  assert.deepEqual(order, ['stop the servers']);
});

test('several failures are all reported', async () => {
  const t = collector();
  cleanup(t, () => Promise.reject(new Error('first')));
  cleanup(t, () => Promise.reject(new Error('second')));
  await assert.rejects(t.run(), (err: unknown) => err instanceof AggregateError && err.errors.length === 2);
});
