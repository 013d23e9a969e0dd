// Points git at the repository's own hooks, .githooks/ (commit-msg checks
// the house's rules for commit messages: docs/contributing.md). `npm
// install` runs this (package.json "prepare"), so a fresh clone has the
// hook before its first commit.
//
// It sets core.hooksPath only in a git checkout whose top level is this
// package: installed anywhere else (from a tarball, or inside another
// project's repository) it changes nothing, and it never fails an install.
// A core.hooksPath set to another directory (the developer's own hooks) is
// left alone, with a note saying how to use ours.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HOOKS = '.githooks';
const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** git's answer in the package root, or null when git is missing or says no. */
function git(...args) {
  const run = spawnSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return run.error || run.status !== 0 ? null : run.stdout.trim();
}

function setUp() {
  if (!existsSync(path.join(root, HOOKS))) return;
  const top = git('rev-parse', '--show-toplevel');
  if (top === null || realpathSync(top) !== realpathSync(root)) return;
  const current = git('config', '--get', 'core.hooksPath');
  if (current === HOOKS) return;
  if (current) {
    process.stderr.write(`p-e-relay: core.hooksPath is ${current}, so the repository's commit-msg hook (${HOOKS}/) is not used; ` +
      `run \`git config core.hooksPath ${HOOKS}\` to use it (docs/contributing.md).\n`);
    return;
  }
  if (git('config', 'core.hooksPath', HOOKS) === null) process.stderr.write(`p-e-relay: could not set core.hooksPath to ${HOOKS}; commit messages go unchecked.\n`);
}

try {
  setUp();
} catch (error) {
  process.stderr.write(`p-e-relay: git hooks not set up (${error instanceof Error ? error.message : String(error)}).\n`);
}
