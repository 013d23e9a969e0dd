import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

// The bench itself stays out of `npm test` (speed is measured, never asserted);
// this only checks that its smallest slice still runs end to end.
test('npm run bench runs: the quick stdio reads slice on a 1k corpus', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'run.ts'), '--quick', '--only', 'reads', '--reps', '1', '--sizes', '1000', '--no-build'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 0, out);
  assert.match(out, /exists, 1k records: [\d,.]+ calls\/s/);
  assert.match(out, /get_relay, 1k records: [\d,.]+ calls\/s/);
});
