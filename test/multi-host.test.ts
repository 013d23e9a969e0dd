/**
 * The multi-host script (scripts/multi-host.ts: network namespaces, sshd,
 * sshfs, rsync mirrors) as a test, behind P_E_RELAY_MULTIHOST=1 because it
 * needs root, takes minutes and installs Debian packages when missing.
 * Without the flag it is skipped, saying so. Run it alone with
 * `sudo npm run test:multi-host`, which also prints the figures.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './helpers.js';

const ENABLED = process.env.P_E_RELAY_MULTIHOST === '1';

test('two writer hosts on one sshfs corpus, a cross-host waiter and a mirror chain (scripts/multi-host.ts)', { timeout: 25 * 60_000, skip: ENABLED ? false : 'set P_E_RELAY_MULTIHOST=1 (root, ip netns, /dev/fuse; sshd and sshfs installed from Debian if missing) to run it; `npm run test:multi-host` prints its figures' }, async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'multi-host.ts')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const skipped = /^SKIP: (.*)$/m.exec(out);
  if (skipped) return t.skip(skipped[1]);
  t.diagnostic(out.slice(out.indexOf('figures:')));
  assert.equal(code, 0, out);
});
