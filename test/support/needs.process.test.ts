/**
 * test/support/needs.ts and the reporter `npm test` runs
 * (test/support/skip-summary.mjs): a test whose system tool is not on PATH
 * is skipped with the line that installs it, the run still prints
 * node:test's closing counts, then what was skipped and why; under
 * P_E_RELAY_NO_SKIPS=1 (.ci/run) any skip but the multi-host bed's fails it.
 * Real child runs of node --test, with PATH cut down to a directory that
 * holds only node.
 */
import assert from 'node:assert/strict';
import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { ROOT, runProcess, tempDir } from './helpers.js';
import { missing, toolPath } from './needs.js';

const REPORTER = path.join(ROOT, 'test', 'support', 'skip-summary.mjs');
const NEEDS = path.join(ROOT, 'test', 'support', 'needs.ts');

/** A PATH that holds node and nothing else, plus the names given, each a link to node (something executable). */
async function barePath(t: TestContext, alsoNamed: string[] = []): Promise<string> {
  const bin = await tempDir(t, 'pe-relay-bin-');
  for (const name of ['node', ...alsoNamed]) await symlink(process.execPath, path.join(bin, name));
  return bin;
}

/** A test file of two tests, the second needing rsync (or skipped as given); named as given. */
async function fixture(t: TestContext, name: string, second = `test('mirrors with rsync', needs('rsync'), () => {});`): Promise<string> {
  const file = path.join(await tempDir(t), name);
  await writeFile(file, [
    `import { test } from 'node:test';`,
    `import { needs } from ${JSON.stringify(NEEDS)};`,
    `test('runs anywhere', () => {});`,
    second,
  ].join('\n'));
  return file;
}

function runTests(file: string, env: NodeJS.ProcessEnv) {
  return runProcess([process.execPath, '--import', 'tsx', '--test', `--test-reporter=${REPORTER}`, file], { cwd: ROOT, env: { HOME: process.env.HOME, ...env } });
}

test('toolPath looks a tool up on PATH by each of its names; missing says which one and how to install it', async (t) => {
  const bin = await barePath(t, ['gcc']);
  assert.equal(toolPath('cc', { PATH: bin }), path.join(bin, 'gcc'), 'cc, else gcc');
  assert.equal(toolPath('rsync', { PATH: bin }), null);
  assert.equal(missing(['cc', 'rsync'], { PATH: bin }), 'needs rsync, not found on PATH; install it with: apt-get install -y rsync');
  assert.equal(missing(['cc'], { PATH: bin }), null);
});

test('a python3 without venv is missing python3-venv: being on PATH is not enough', async (t) => {
  const bin = await barePath(t, ['python3']); // node under that name: "import venv" fails, as on Debian without python3-venv
  assert.equal(toolPath('python3-venv', { PATH: bin }), null);
  assert.match(missing(['python3-venv'], { PATH: bin })!, /apt-get install -y python3 python3-venv$/);
});

test('a run without rsync skips its test with the install line, keeps the closing # pass and # fail, then sums up the skips', async (t) => {
  const file = await fixture(t, 'mirror-like.test.ts');
  const run = await runTests(file, { PATH: await barePath(t) });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^ok 2 - mirrors with rsync # SKIP needs rsync, not found on PATH; install it with: apt-get install -y rsync$/m);
  assert.match(run.stdout, /^# pass 1$/m);
  assert.match(run.stdout, /^# fail 0$/m);
  assert.match(run.stdout, /# skip reasons \(1 skipped\):\n# {3}needs rsync, not found on PATH; install it with: apt-get install -y rsync \(1 in .*mirror-like\.test\.ts\)\n$/);
});

test('with P_E_RELAY_NO_SKIPS=1 a skip fails the run, except in the multi-host bed (the Python SDK\'s included)', async (t) => {
  const bare = await barePath(t);
  const strict = await runTests(await fixture(t, 'mirror-like.test.ts'), { PATH: bare, P_E_RELAY_NO_SKIPS: '1' });
  assert.equal(strict.code, 1);
  assert.match(strict.stdout, /P_E_RELAY_NO_SKIPS=1: 1 skipped beyond the multi-host bed; this run fails/);
  const bed = await runTests(await fixture(t, 'multi-host.test.ts'), { PATH: bare, P_E_RELAY_NO_SKIPS: '1' });
  assert.equal(bed.code, 0, bed.stdout);
  const pypi = await runTests(await fixture(t, 'python-like.test.ts', `test('sdk', { skip: 'needs PyPI: pip install mcp failed: offline' }, () => {});`), { PATH: bare, P_E_RELAY_NO_SKIPS: '1' });
  assert.equal(pypi.code, 1, pypi.stdout);
  const full = await runTests(await fixture(t, 'mirror-like.test.ts'), { PATH: await barePath(t, ['rsync']), P_E_RELAY_NO_SKIPS: '1' });
  assert.equal(full.code, 0, full.stdout);
  assert.match(full.stdout, /# nothing skipped\n$/);
});
