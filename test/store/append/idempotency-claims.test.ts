/**
 * The cross-process claim behind exactly once (spec §8b), at its own seam:
 * two stores in one process share a pid, so a claim that names this process
 * is judged by what this process holds, and that includes one still being
 * linked and one still being marked done. The file system is the real one;
 * the ordering is made by holding one call until the other writer has looked.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { silentLogger } from '../../../lib/log.js';
import { IdempotencyClaims } from '../../../lib/store/append/idempotency-claims.js';

const CLAIM = /[0-9a-f]{64}\.0$/;
const DONE = /[0-9a-f]{64}\.done$/;

/** Two stores' claims in one process, on one temp corpus's idempotency and tmp directories. */
async function twoStores(t: TestContext): Promise<{ a: IdempotencyClaims; b: IdempotencyClaims; dir: string; tmp: string }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'relay-claims-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dir = path.join(root, 'idempotency');
  const tmp = path.join(root, 'tmp');
  await mkdir(tmp, { recursive: true });
  return { a: new IdempotencyClaims(dir, tmp, silentLogger), b: new IdempotencyClaims(dir, tmp, silentLogger), dir, tmp };
}

test('a claim another store in this process has just linked is waited for, not taken over as dead', async (t) => {
  const { a, b, tmp } = await twoStores(t);

  // a's claim is on disk, but a has not yet come back from linking it (its temp file's unlink is held)
  // until b has read that claim and judged it: b's next look is at the done mark.
  let releaseA!: () => void;
  const aMayGoOn = new Promise<void>((resolve) => (releaseA = resolve));
  let aLinked!: () => void;
  const claimOnDisk = new Promise<void>((resolve) => (aLinked = resolve));
  let bReadClaim = false;
  const unlink = fs.unlink.bind(fs);
  const open = fs.open.bind(fs) as (file: string, flags: number) => Promise<fs.FileHandle>;
  const link = fs.link.bind(fs);
  let bLooked = false;
  let bNextLink!: (target: string) => void;
  const bTriesNext = new Promise<string>((resolve) => (bNextLink = resolve));
  let first = true;
  t.mock.method(fs, 'link', async (from: string, to: string) => {
    if (bLooked) bNextLink(path.basename(to));
    await link(from, to);
    if (first && CLAIM.test(to)) {
      first = false;
      aLinked();
    }
  });
  let holding = true;
  t.mock.method(fs, 'unlink', async (file: string) => {
    if (holding && file.startsWith(tmp)) {
      holding = false;
      await aMayGoOn;
    }
    return unlink(file);
  });
  // Claims and done marks are read through one open each (lib/disk/state-file.ts).
  t.mock.method(fs, 'open', async (file: string, flags: number) => {
    if (bReadClaim && DONE.test(file)) {
      bLooked = true;
      releaseA();
    }
    const handle = await open(file, flags);
    if (CLAIM.test(file)) bReadClaim = true;
    return handle;
  });

  const gotA = a.acquire('mcp\nk-1');
  await claimOnDisk;
  const gotB = b.acquire('mcp\nk-1');
  // Taking over would link generation 1 beside a's live generation 0, and both would store.
  assert.match(await bTriesNext, /\.0$/, 'b tries a\'s claim again later; it does not take it over');
  const mine = await gotA;
  assert.equal(mine.done, false, 'a linked the claim first');
  if (!mine.done) {
    assert.equal(await mine.claim.stillOurs(), true);
    await mine.claim.finish('relay-0007');
  }
  assert.deepEqual(await gotB, { done: true, id: 'relay-0007' }, 'b answers the record a stored, and stores nothing');
});

test('a claim another store in this process is marking done is waited for, not taken over as dead', async (t) => {
  const { a, b } = await twoStores(t);
  const mine = await a.acquire('mcp\nk-1');
  assert.equal(mine.done, false);
  if (mine.done) return;

  // a's done mark is held back until b has read a's claim once a began to finish, and tried its next link.
  let releaseDone!: () => void;
  const doneMayLand = new Promise<void>((resolve) => (releaseDone = resolve));
  let finishing = false;
  let bLooked = false;
  let bNextLink!: (target: string) => void;
  const bTriesNext = new Promise<string>((resolve) => (bNextLink = resolve));
  const open = fs.open.bind(fs) as (file: string, flags: number) => Promise<fs.FileHandle>;
  const link = fs.link.bind(fs);
  t.mock.method(fs, 'link', async (from: string, to: string) => {
    if (DONE.test(to)) {
      finishing = true;
      await doneMayLand;
    } else if (bLooked) {
      bNextLink(path.basename(to));
      releaseDone();
    }
    return link(from, to);
  });
  t.mock.method(fs, 'open', async (file: string, flags: number) => {
    const handle = await open(file, flags);
    if (finishing && CLAIM.test(file)) bLooked = true;
    return handle;
  });

  const gotB = b.acquire('mcp\nk-1');
  const finished = mine.claim.finish('relay-0007');
  assert.match(await bTriesNext, /\.0$/, 'b tries a\'s claim again later; it does not take it over');
  await finished;
  assert.deepEqual(await gotB, { done: true, id: 'relay-0007' });
});
