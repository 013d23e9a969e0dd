/**
 * The roster's cheap look (namesAndAbouts): what a wait compares on every
 * answer to learn whether who is here is news. It must move when a name
 * joins or an about is stated anew, and stand still when a name is only
 * seen again or starts waiting, which happen on every call.
 */
import assert from 'node:assert/strict';
import fs, { mkdir, mkdtemp, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { hostIdentity } from '../../../lib/disk/host.js';
import { silentLogger } from '../../../lib/log.js';
import { Roster } from '../../../lib/store/agents/roster.js';
import { cleanup } from '../../support/cleanup.js';

async function roster(t: TestContext): Promise<Roster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'roster-'));
  const r = new Roster(path.join(dir, 'roster'), silentLogger);
  cleanup(t, () => r.close());
  return r;
}

/** Two processes' rosters on one directory. */
async function twoRosters(t: TestContext): Promise<{ dir: string; rosters: [Roster, Roster] }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'roster-'));
  const rosters: [Roster, Roster] = [new Roster(path.join(dir, 'roster'), silentLogger), new Roster(path.join(dir, 'roster'), silentLogger)];
  cleanup(t, () => Promise.all(rosters.map((r) => r.close())));
  return { dir, rosters };
}

test('the names-and-abouts look moves when a name joins', async (t) => {
  const r = await roster(t);
  await r.seen('ana', 'served');
  const before = (await r.namesAndAbouts()).text;
  await r.seen('bob', 'signed');
  assert.notEqual((await r.namesAndAbouts()).text, before);
});

test('the names-and-abouts look moves when an about is stated anew, and not for an older one', async (t) => {
  const r = await roster(t);
  await r.seen('ana', 'served');
  await r.stated('ana', 'reviews the append path', 5);
  const stated = (await r.namesAndAbouts()).text;
  assert.notEqual(stated, JSON.stringify([['ana'], []]));
  await r.stated('ana', 'an older line', 3);
  assert.equal((await r.namesAndAbouts()).text, stated);
  await r.stated('ana', 'knows the deploy schedule', 9);
  assert.notEqual((await r.namesAndAbouts()).text, stated);
});

test('the names-and-abouts look stands still when a name is seen again or starts waiting', async (t) => {
  const r = await roster(t);
  await r.seen('ana', 'served');
  const before = (await r.namesAndAbouts()).text;
  await r.seen('ana', 'signed');
  const end = r.waitStarted('ana');
  assert.equal((await r.namesAndAbouts()).text, before);
  end();
});

test('an about restated in the same second the abouts were read is seen, though the directory\'s mtime did not move', async (t) => {
  const { dir, rosters: [here, there] } = await twoRosters(t);
  await there.seen('ana', 'served'); // only names on the roster have their abouts read
  await there.stated('ana', 'reviews the append path', 5);
  // A filesystem that keeps whole seconds: the directory's mtime is pinned to one before the first read, and after the restatement.
  const abouts = path.join(dir, 'roster', '.about');
  const second = new Date(Math.floor(Date.now() / 1000) * 1000 - 5000);
  await utimes(abouts, second, second);
  assert.match((await here.namesAndAbouts()).text, /reviews the append path/);
  await there.stated('ana', 'knows the deploy schedule', 9);
  await utimes(abouts, second, second);
  assert.equal((await stat(abouts)).mtimeMs, second.getTime(), 'the mtime did not move');
  assert.match((await here.namesAndAbouts()).text, /knows the deploy schedule/);
});

test('a close is not held by an about waiting for a lock that does not come free', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'roster-'));
  const r = new Roster(path.join(dir, 'roster'), silentLogger);
  await mkdir(path.join(dir, 'roster'), { recursive: true });
  // A lock held by a live process (this one, as another store here would hold it) is waited for, up to the lock's own limit.
  await writeFile(path.join(dir, 'roster', '.about.ana.lock'), `${hostIdentity().host} ${hostIdentity().boot} ${process.pid}\n`);
  const writing = r.stated('ana', 'waits for the lock', 5);
  const started = Date.now();
  await r.close();
  await writing; // it gives up waiting once the roster is closed: nothing keeps the process alive after close
  assert.ok(Date.now() - started < 5_000, `close took ${Date.now() - started} ms`);
  assert.equal(await r.aboutOf('ana'), null, 'and nothing is written after close');
});

test('two processes noting a name\'s abouts at once leave the later record\'s, whichever would write last', async (t) => {
  const { rosters: [a, b] } = await twoRosters(t);
  await a.stated('ana', 'the first', 5);
  // The older about's rename is held back until the newer one's writer has either written it or found the name's
  // lock taken: without the lock, the older one would then land last.
  let bMovedOn!: () => void;
  const held = new Promise<void>((resolve) => (bMovedOn = resolve));
  const rename = fs.rename.bind(fs);
  const open = fs.open.bind(fs) as typeof fs.open;
  t.mock.method(fs, 'rename', async (from: string, to: string) => {
    if ((await fs.readFile(from, 'utf8')).includes('"id":7')) await held;
    await rename(from, to);
    if ((await fs.readFile(to, 'utf8')).includes('"id":9')) bMovedOn();
  });
  t.mock.method(fs, 'open', async (...args: Parameters<typeof fs.open>) =>
    open(...args).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST' && String(args[0]).endsWith('.ana.lock')) bMovedOn();
      throw err;
    }),
  );
  const older = a.stated('ana', 'the older', 7);
  await new Promise((resolve) => setTimeout(resolve, 20)); // a is holding its rename now
  await Promise.all([older, b.stated('ana', 'the newer', 9)]);
  assert.deepEqual(await a.aboutOf('ana'), { about: 'the newer', id: 9 });
});
