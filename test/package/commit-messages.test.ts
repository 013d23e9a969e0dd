/**
 * Every commit since the rule began follows the house's rules for a commit
 * message (docs/contributing.md), checked by the same hook that refuses a
 * bad message at commit time (.githooks/commit-msg), so a commit made where
 * the hook was not set up (a clone without `npm install`, `--no-verify`)
 * is still caught here.
 *
 * Commits up to RULE_BEGAN predate the rule and are left as they are:
 * history is never rewritten.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

/** The last commit made before the rule. */
const RULE_BEGAN = 'ecc8d9e';

function git(...args: string[]): { ok: boolean; out: string } {
  const run = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  return { ok: !run.error && run.status === 0, out: run.stdout ?? '' };
}

/** Why the history cannot be checked here, or null when it can. */
function cannotCheck(): string | null {
  const top = git('rev-parse', '--show-toplevel');
  if (!top.ok || realpathSync(top.out.trim()) !== realpathSync(ROOT)) return 'not run from a git checkout of p-e-relay (or git is not installed): no history to check';
  if (!git('cat-file', '-e', `${RULE_BEGAN}^{commit}`).ok) {
    return `commit ${RULE_BEGAN}, where the commit message rule begins, is not in this clone (a shallow clone?); fetch the full history to check it`;
  }
  if (!git('merge-base', '--is-ancestor', RULE_BEGAN, 'HEAD').ok) return `HEAD does not descend from ${RULE_BEGAN}, where the commit message rule begins`;
  return null;
}

test(`every commit after ${RULE_BEGAN} has a subject of at most 72 characters, no final full stop, and a blank line before its body`, async (t) => {
  const why = cannotCheck();
  if (why !== null) {
    t.skip(why);
    return;
  }
  const log = git('log', '--format=%H%x00%B%x00', `${RULE_BEGAN}..HEAD`);
  assert.ok(log.ok, 'git log ran');
  const fields = log.out.split('\0');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-commits-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const files: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const sha = fields[i]!.trim();
    const file = path.join(dir, sha.slice(0, 12));
    await writeFile(file, fields[i + 1]!);
    files.push(file);
  }
  if (files.length === 0) return;
  const hook = spawnSync(process.execPath, [path.join(ROOT, '.githooks', 'commit-msg'), ...files], { encoding: 'utf8' });
  assert.equal(hook.status, 0, `commits whose messages break the rules (named by their first 12 hex digits):\n${hook.stderr}`);
});
