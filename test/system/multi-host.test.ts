/**
 * The multi-host beds (test/system/beds/multi-host.ts: network namespaces,
 * sshd, sshfs, rsync mirrors; beds/gluster.ts: a GlusterFS replica volume
 * with a storage host lost) as tests, behind P_E_RELAY_MULTIHOST=1 because they
 * need root, take minutes and install Debian packages when missing.
 * Without the flag it is skipped, saying so. Run it alone with
 * `sudo npm run test:multi-host` or `sudo npm run test:gluster`, which print the figures.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { ROOT } from '../support/helpers.js';

const ENABLED = process.env.P_E_RELAY_MULTIHOST === '1';

/** Runs a bed script; skips with its reason when it printed SKIP. */
async function bed(t: TestContext, script: string): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test', 'system', 'beds', script)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, P_E_RELAY_MULTIHOST: '1' } });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const skipped = /^SKIP: (.*)$/m.exec(out);
  if (skipped) return t.skip(skipped[1]);
  t.diagnostic(out.slice(out.indexOf('figures:')));
  assert.equal(code, 0, out);
}

test('the corpus on a GlusterFS replica volume, 2 × 4 writers, a storage host lost and healed (test/system/beds/gluster.ts)', { timeout: 20 * 60_000, skip: ENABLED ? false : 'set P_E_RELAY_MULTIHOST=1 (root, ip netns, /dev/fuse; glusterfs-server and -client installed from Debian if missing) to run it; `npm run test:gluster` prints its figures' }, (t) => bed(t, 'gluster.ts'));

test('two writer hosts on one sshfs corpus, a cross-host waiter and a mirror chain (test/system/beds/multi-host.ts)', { timeout: 25 * 60_000, skip: ENABLED ? false : 'set P_E_RELAY_MULTIHOST=1 (root, ip netns, /dev/fuse; sshd and sshfs installed from Debian if missing) to run it; `npm run test:multi-host` prints its figures' }, (t) => bed(t, 'multi-host.ts'));

test('a local read replica on another host forwarding appends to the primary, its waiter woken from a third host, the primary down 30 s (test/system/beds/replica.ts)', { timeout: 15 * 60_000, skip: ENABLED ? false : 'set P_E_RELAY_MULTIHOST=1 (root, ip netns, rsync) to run it; `npm run test:replica-bed` prints its figures' }, (t) => bed(t, 'replica.ts'));
