/**
 * Reviewing the corpus in git, with the real git: the files `init` writes
 * keep every record's bytes exact through commit and clone (even for a
 * clone that converts line endings), commits only ever add files, and
 * `verify` passes on a fresh clone and names a record whose bytes changed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { openStore } from '../../lib/store/store.js';
import { record, runCli, tempDir, tempStore } from '../support/helpers.js';

const run = promisify(execFile);

/** Records whose bytes a careless checkout would change: CRLF, trailing blanks, a lone CR, no final newline. */
const AWKWARD = [
  '@p-e/x0\r\nkind: note\r\nfrom: win-agent\r\n\r\nline one\r\nline two\r\n',
  '@p-e/x0\nkind: note\n\ntrailing spaces   \n\ttabbed\t\n\n\n',
  '@p-e/x0\nkind: note\n\na lone\rcarriage return, and no final newline',
  record({ kind: 'plain' }, 'only LF line endings\n'),
];

/** git with no user or system config of this machine, so the test sees only what it sets. */
async function gitIn(t: TestContext) {
  const home = await tempDir(t, 'pe-relay-home-');
  const env = { ...process.env, HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: path.join(home, 'none'), GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 't@example.invalid', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 't@example.invalid' };
  return async (cwd: string, ...args: string[]) => (await run('git', args, { cwd, env })).stdout;
}

/** A store with the awkward records, committed to a fresh repository around it. */
async function committedStore(t: TestContext) {
  const git = await gitIn(t);
  const { dir, corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  for (const bytes of AWKWARD) await store.append(Buffer.from(bytes), { depositedBy: 'cli/test' });
  await git(dir, 'init', '-q');
  await git(dir, 'add', 'corpus');
  await git(dir, 'commit', '-q', '-m', 'records');
  return { git, dir, corpus, store };
}

async function records(corpus: string): Promise<Map<string, Buffer>> {
  const names = (await readdir(corpus)).filter((n) => /^relay-\d+$/.test(n)).sort();
  return new Map(await Promise.all(names.map(async (n) => [n, await readFile(path.join(corpus, n))] as const)));
}

test('init writes .gitattributes (* -text) and .gitignore (.state/) in the corpus', async (t) => {
  const { corpus } = await tempStore(t);
  const lines = async (name: string) => (await readFile(path.join(corpus, name), 'utf8')).split('\n').filter((l) => l && !l.startsWith('#'));
  assert.deepEqual(await lines('.gitattributes'), ['* -text']);
  assert.deepEqual(await lines('.gitignore'), ['.state/']);
});

test('commit and clone keep every record byte for byte, even with core.autocrlf=true', async (t) => {
  const { git, dir, corpus } = await committedStore(t);
  const clone = path.join(await tempDir(t), 'clone');
  await git(dir, 'clone', '-q', '-c', 'core.autocrlf=true', dir, clone);
  assert.equal(await git(clone, 'config', 'core.autocrlf'), 'true\n');
  const original = await records(corpus);
  assert.equal(original.size, AWKWARD.length);
  assert.deepEqual(await records(path.join(clone, 'corpus')), original);
  assert.equal(await git(dir, 'ls-files', 'corpus/.state'), '', '.state/ is never committed');
});

test('without .gitattributes, the same clone would rewrite records (why init writes it)', async (t) => {
  const git = await gitIn(t);
  const { dir, corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  await store.append(Buffer.from(record({}, 'only LF\n')), { depositedBy: 'cli/test' });
  await store.close();
  await rm(path.join(corpus, '.gitattributes'));
  await git(dir, 'init', '-q');
  await git(dir, 'add', 'corpus');
  await git(dir, 'commit', '-q', '-m', 'records');
  const clone = path.join(await tempDir(t), 'clone');
  await git(dir, 'clone', '-q', '-c', 'core.autocrlf=true', dir, clone);
  assert.notDeepEqual(await records(path.join(clone, 'corpus')), await records(corpus));
  assert.equal((await runCli(['verify', '--corpus', path.join(clone, 'corpus')])).code, 1);
});

test('a later commit of the corpus only adds files', async (t) => {
  const { git, dir, store } = await committedStore(t);
  await store.append(Buffer.from(record({ kind: 'reply', parent: 'relay-0001' })), { depositedBy: 'cli/test' });
  await store.append(Buffer.from(record({ kind: 'note' })), { depositedBy: 'cli/test' });
  await git(dir, 'add', 'corpus');
  await git(dir, 'commit', '-q', '-m', 'more records');
  const changes = (await git(dir, 'diff', '--name-status', 'HEAD~1', 'HEAD')).trim().split('\n');
  assert.deepEqual(changes, ['A\tcorpus/relay-0005', 'A\tcorpus/relay-0006']);
});

test('verify passes on a fresh clone and names a record whose bytes were edited', async (t) => {
  const { git, dir } = await committedStore(t);
  const clone = path.join(await tempDir(t), 'clone');
  await git(dir, 'clone', '-q', dir, clone);
  const corpus = path.join(clone, 'corpus');
  const clean = await runCli(['verify', '--corpus', corpus]);
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  assert.match(clean.stdout, new RegExp(`^${AWKWARD.length} records checked, 0 damaged`, 'm'));

  const file = path.join(corpus, 'relay-0002');
  await writeFile(file, (await readFile(file, 'utf8')).replace('trailing spaces   ', 'trailing spaces'));
  const edited = await runCli(['verify', '--corpus', corpus]);
  assert.equal(edited.code, 1);
  assert.match(edited.stdout, /^damaged relay-0002: /m);
  assert.doesNotMatch(edited.stdout, /damaged relay-000[134]/);
});
