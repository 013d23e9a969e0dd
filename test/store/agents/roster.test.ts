/**
 * The roster's cheap look (namesAndAbouts): what a wait compares on every
 * answer to learn whether who is here is news. It must move when a name
 * joins or an about is stated anew, and stand still when a name is only
 * seen again or starts waiting, which happen on every call.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { silentLogger } from '../../../lib/log.js';
import { Roster } from '../../../lib/store/agents/roster.js';
import { cleanup } from '../../support/cleanup.js';

async function roster(t: TestContext): Promise<Roster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'roster-'));
  const r = new Roster(path.join(dir, 'roster'), silentLogger);
  cleanup(t, () => r.close());
  return r;
}

test('the names-and-abouts look moves when a name joins', async (t) => {
  const r = await roster(t);
  await r.seen('ana', 'served');
  const before = await r.namesAndAbouts();
  await r.seen('bob', 'signed');
  assert.notEqual(await r.namesAndAbouts(), before);
});

test('the names-and-abouts look moves when an about is stated anew, and not for an older one', async (t) => {
  const r = await roster(t);
  await r.seen('ana', 'served');
  await r.stated('ana', 'reviews the append path', 5);
  const stated = await r.namesAndAbouts();
  assert.notEqual(stated, JSON.stringify([['ana'], []]));
  await r.stated('ana', 'an older line', 3);
  assert.equal(await r.namesAndAbouts(), stated);
  await r.stated('ana', 'knows the deploy schedule', 9);
  assert.notEqual(await r.namesAndAbouts(), stated);
});

test('the names-and-abouts look stands still when a name is seen again or starts waiting', async (t) => {
  const r = await roster(t);
  await r.seen('ana', 'served');
  const before = await r.namesAndAbouts();
  await r.seen('ana', 'signed');
  const end = r.waitStarted('ana');
  assert.equal(await r.namesAndAbouts(), before);
  end();
});
