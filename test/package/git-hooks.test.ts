/**
 * The commit-msg hook (.githooks/commit-msg) and the install step that turns
 * it on (scripts/git-hooks.mjs, run by package.json's "prepare"), each in a
 * temp repository with the real git. The git here sees no global or system
 * configuration, so the machine's own settings cannot change the outcome.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { ROOT, tempDir, type CliResult } from '../support/helpers.js';
import { needs } from '../support/needs.js';

const HOOK = path.join(ROOT, '.githooks', 'commit-msg');

/** Runs a command with no stdin (git may exit before reading one) and collects what it prints. */
function runProcess(argv: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function gitEnv(dir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    // Never find a repository above the temp directory.
    GIT_CEILING_DIRECTORIES: path.dirname(dir),
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 'test@example.invalid',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 'test@example.invalid',
  };
}

function git(dir: string, ...args: string[]): Promise<CliResult> {
  return runProcess(['git', ...args], { cwd: dir, env: gitEnv(dir) });
}

/** A copy of the package's hook files in a fresh directory, as a clone would hold them. */
async function packageCopy(t: TestContext): Promise<string> {
  const dir = path.join(await tempDir(t, 'pe-relay-hooks-'), 'pkg');
  await mkdir(path.join(dir, 'scripts'), { recursive: true });
  await cp(path.join(ROOT, '.githooks'), path.join(dir, '.githooks'), { recursive: true });
  await cp(path.join(ROOT, 'scripts', 'git-hooks.mjs'), path.join(dir, 'scripts', 'git-hooks.mjs'));
  return dir;
}

function installStep(dir: string): Promise<CliResult> {
  return runProcess([process.execPath, path.join(dir, 'scripts', 'git-hooks.mjs')], { cwd: dir, env: gitEnv(dir) });
}

async function hooksPath(dir: string): Promise<string> {
  return (await git(dir, 'config', '--get', 'core.hooksPath')).stdout.trim();
}

/** A repository whose hooks are the package's own (as after `npm install`), ready to commit in. */
async function repoWithHook(t: TestContext): Promise<string> {
  const dir = await packageCopy(t);
  assert.equal((await git(dir, 'init', '-q')).code, 0);
  assert.equal((await installStep(dir)).code, 0);
  return dir;
}

async function commits(dir: string): Promise<number> {
  const count = await git(dir, 'rev-list', '--all', '--count');
  return Number(count.stdout.trim() || '0');
}

test('the install step points core.hooksPath at .githooks in a git checkout', needs('git'), async (t) => {
  const dir = await packageCopy(t);
  await git(dir, 'init', '-q');
  const run = await installStep(dir);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(await hooksPath(dir), '.githooks');
});

test('the install step does nothing and succeeds outside a git checkout', needs('git'), async (t) => {
  const dir = await packageCopy(t);
  const run = await installStep(dir);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  assert.notEqual((await git(dir, 'rev-parse', '--git-dir')).code, 0, 'no repository was made');
});

test('the install step leaves the hooks of a repository the package sits inside alone', needs('git'), async (t) => {
  const dir = await packageCopy(t);
  const outer = path.dirname(dir);
  await git(outer, 'init', '-q');
  const run = await runProcess([process.execPath, path.join(dir, 'scripts', 'git-hooks.mjs')], { cwd: dir, env: gitEnv(outer) });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(await hooksPath(outer), '');
});

test('the install step keeps a hooks path the developer chose, and says how to use ours', needs('git'), async (t) => {
  const dir = await packageCopy(t);
  await git(dir, 'init', '-q');
  await git(dir, 'config', 'core.hooksPath', 'my-hooks');
  const run = await installStep(dir);
  assert.equal(run.code, 0);
  assert.equal(await hooksPath(dir), 'my-hooks');
  assert.match(run.stderr, /git config core\.hooksPath \.githooks/);
});

test('the install step succeeds where git is not installed', async (t) => {
  const dir = await packageCopy(t);
  const run = await runProcess([process.execPath, path.join(dir, 'scripts', 'git-hooks.mjs')], { cwd: dir, env: { ...process.env, PATH: '' } });
  assert.equal(run.code, 0, run.stderr);
});

test('a commit whose subject is over 72 characters is refused with a sentence giving the limit', needs('git'), async (t) => {
  const dir = await repoWithHook(t);
  const subject = 'Explain in a subject line far longer than anyone can read in a one-line log';
  assert.ok(subject.length > 72);
  const run = await git(dir, 'commit', '-q', '--allow-empty', '-m', subject);
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /The subject is 75 characters long; the limit is 72\./);
  assert.equal(await commits(dir), 0);
});

test('a commit whose subject is 72 characters, with a body after a blank line, is made', needs('git'), async (t) => {
  const dir = await repoWithHook(t);
  const subject = 'Cap mark files per agent, so that one agent cannot fill the disk for all';
  assert.equal(subject.length, 72);
  const run = await git(dir, 'commit', '-q', '--allow-empty', '-m', subject, '-m', 'Why, in the body.');
  assert.equal(run.code, 0, run.stderr);
  assert.equal(await commits(dir), 1);
});

test('a subject counts characters, not bytes', needs('git'), async (t) => {
  const dir = await repoWithHook(t);
  const subject = 'Cite spec §8d — named agents — in comments, and spec §9 for the hub door';
  assert.ok(subject.length <= 72 && Buffer.byteLength(subject) > 72);
  const run = await git(dir, 'commit', '-q', '--allow-empty', '-m', subject);
  assert.equal(run.code, 0, run.stderr);
});

test('a commit whose subject ends in a full stop is refused', needs('git'), async (t) => {
  const dir = await repoWithHook(t);
  const run = await git(dir, 'commit', '-q', '--allow-empty', '-m', 'Cap mark files per agent.');
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /ends with a full stop/);
  assert.equal(await commits(dir), 0);
});

test('a commit whose body starts on the second line is refused', needs('git'), async (t) => {
  const dir = await repoWithHook(t);
  const message = path.join(dir, '..', 'message');
  await writeFile(message, 'Cap mark files per agent\nbecause one agent could fill the disk\n');
  const run = await git(dir, 'commit', '-q', '--allow-empty', '-F', message);
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /second line is not blank/);
  assert.equal(await commits(dir), 0);
});

test("the hook reads the message git will keep: comment lines and the part below the scissors do not count", async (t) => {
  const file = path.join(await tempDir(t), 'COMMIT_EDITMSG');
  await writeFile(file, [
    'Cap mark files per agent',
    '',
    'One agent could fill the disk.',
    '# Please enter the commit message for your changes. Lines starting with a hash are ignored, however long they are.',
    '# ------------------------ >8 ------------------------',
    'diff --git a/x b/x, a line far longer than seventy-two characters, which git cuts away',
  ].join('\n'));
  const run = await runProcess([process.execPath, HOOK, file]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(await readFile(file, 'utf8').then((s) => s.startsWith('Cap')), true, 'the hook never rewrites the message');
});
