/**
 * Only a store is used as a corpus (lib/store/store-mark.ts): a directory
 * made by `init`, the shipped ./corpus, a git clone of a store, a mirror, a
 * directory holding records, or an empty one (made a store). Anything else
 * (the corpus's parent, a git checkout) is refused `not_a_store` by every
 * command and `serve`, naming the init line, before anything is written.
 * The CLI and the servers are real child processes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT, record, runCli, stdioClient, tempDir, tempStore } from '../support/helpers.js';
import { refused } from '../support/refusal.js';
import { RelayStore } from '../../lib/store/store.js';

const git = promisify(execFile);

/** A directory laid out like a source checkout: files and folders, none of a store's. */
async function checkout(t: import('node:test').TestContext): Promise<string> {
  const dir = await tempDir(t);
  await writeFile(path.join(dir, 'package.json'), '{}\n');
  await writeFile(path.join(dir, '.gitignore'), 'node_modules/\n');
  await mkdir(path.join(dir, 'src'));
  return dir;
}

test("append --corpus the corpus's parent is refused, names the corpus below it, and writes nothing", async (t) => {
  const { dir, corpus } = await tempStore(t);
  const before = await readdir(dir);
  const result = await runCli(['append', '--corpus', dir], { input: record() });
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /is not a p-e-relay store/);
  assert.match(result.stderr, new RegExp(`pass --corpus ${corpus}`));
  assert.match(result.stderr, new RegExp(`p-e-relay init --corpus ${dir}`));
  assert.deepEqual(await readdir(dir), before, 'no relay-0001 beside corpus/');
});

test('serve on a git checkout is refused at start, over stdio and over HTTP', async (t) => {
  const dir = await checkout(t);
  for (const args of [['serve'], ['serve', '--http', '--port', '0']]) {
    const result = await runCli([...args, '--corpus', dir]);
    assert.equal(result.code, 1, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, /is not a p-e-relay store/, args.join(' '));
  }
  assert.deepEqual((await readdir(dir)).sort(), ['.gitignore', 'package.json', 'src']);
});

test('every command refuses a directory that is not a store; the store itself says not_a_store', async (t) => {
  const dir = await checkout(t);
  for (const args of [['ls'], ['get', 'relay-0001'], ['exists', 'relay-0001'], ['wait', '--timeout', '0'], ['tail'], ['replies', 'relay-0001'], ['verify'], ['inbox', '--to', 'a']]) {
    const result = await runCli([...args, '--corpus', dir]);
    assert.equal(result.code, 1, `${args[0]}: ${result.stderr}`);
    assert.match(result.stderr, /is not a p-e-relay store/, args[0]);
  }
  const refusal = await refused(RelayStore.prepare({ corpus: dir }), 'not_a_store');
  assert.equal(refusal.details.corpus, dir);
});

test('what counts as a store: the shipped ./corpus, a git clone of a store, a directory of records only', async (t) => {
  const shipped = await tempDir(t);
  for (const name of ['README.md', '.gitignore', '.gitattributes']) await copyFile(path.join(ROOT, 'corpus', name), path.join(shipped, name));
  const { dir, corpus } = await tempStore(t);
  assert.equal((await runCli(['append', '--corpus', corpus], { input: record() })).code, 0);
  await git('git', ['init', '-q', corpus]);
  await git('git', ['-C', corpus, 'add', '-A']);
  await git('git', ['-C', corpus, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'store']);
  const clone = path.join(dir, 'clone');
  await git('git', ['clone', '-q', corpus, clone]);
  const recordsOnly = await tempDir(t);
  await copyFile(path.join(corpus, 'relay-0001'), path.join(recordsOnly, 'relay-0001'));
  for (const [label, where, present] of [['shipped', shipped, ''], ['clone', clone, ' relay-0001'], ['records only', recordsOnly, ' relay-0001']] as const) {
    const result = await runCli(['ls', '--corpus', where]);
    assert.equal(result.code, 0, `${label}: ${result.stderr}`);
    assert.equal(result.stdout.split('\n')[0], `present (${present ? 1 : 0}):${present}`, label);
  }
});

test('an empty directory is made a store, as init makes one, and serves', async (t) => {
  const empty = await tempDir(t);
  const { client } = await stdioClient(t, empty);
  const stored = await client.callTool({ name: 'append_relay', arguments: { bytes: record() } });
  assert.notEqual(stored.isError, true);
  const names = await readdir(empty);
  for (const name of ['.p-e-relay', '.gitattributes', '.gitignore', '.state', 'relay-0001']) assert.ok(names.includes(name), `${name} in ${names.join(' ')}`);
});
