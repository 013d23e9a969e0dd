/**
 * The test reporter `npm test` runs: node:test's own TAP (its closing
 * `# pass N`, `# fail N` lines included), then what was skipped and why,
 * one line per reason, so a fresh machine's run says what it did not test
 * and what to install to test it (test/support/needs.ts writes the reasons).
 *
 * With P_E_RELAY_NO_SKIPS=1 (.ci/run sets it) any skip but the multi-host
 * bed's (it needs root and network namespaces, and runs on its own) fails
 * the run: CI has installed every tool, so a skip there is a test not run.
 *
 * Plain JavaScript: the runner loads its reporters before `--import tsx`.
 */
import path from 'node:path';
import { tap } from 'node:test/reporters';

/** Skips the runner makes itself: a --test-name-pattern run is not missing anything. */
const NOT_A_GAP = /^test name does not match pattern$/;
/**
 * What CI may skip: the multi-host bed (root, network namespaces, run on
 * its own), and the commit history check in a shallow clone. The Python SDK's test is not on this list: pip's configured
 * index serves `mcp`, so a skip there means an install step broke.
 */
const MAY_SKIP_IN_CI = [
  { file: /multi-host\.test\.ts$/ },
  // A shallow clone holds no history to check; CI's clone is not ours to deepen (no network but the registries).
  { file: /commit-messages\.test\.ts$/, reason: /shallow clone/ },
];
const maySkipInCi = ({ file, reason }) => MAY_SKIP_IN_CI.some((rule) => (rule.file ?? /(?:)/).test(file) && (rule.reason ?? /(?:)/).test(reason));

/** @param {AsyncIterable<{ type: string, data: { file?: string, skip?: string | boolean } }>} source */
export default async function* skipSummary(source) {
  /** @type {{ reason: string, file: string }[]} */
  const skipped = [];
  async function* watch() {
    for await (const event of source) {
      const { skip, file } = event.data ?? {};
      if ((event.type === 'test:pass' || event.type === 'test:fail') && skip) {
        const reason = skip === true ? '(no reason given)' : skip;
        if (!NOT_A_GAP.test(reason)) skipped.push({ reason, file: file ? path.relative(process.cwd(), file) : '?' });
      }
      yield event;
    }
  }
  yield* tap(watch());
  yield summary(skipped);
  const strict = process.env.P_E_RELAY_NO_SKIPS === '1';
  const notAllowed = skipped.filter((s) => !maySkipInCi(s));
  if (strict && notAllowed.length > 0) {
    process.exitCode = 1;
    yield `# P_E_RELAY_NO_SKIPS=1: ${notAllowed.length} skipped beyond the multi-host bed; this run fails\n`;
  }
}

/** @param {{ reason: string, file: string }[]} skipped */
function summary(skipped) {
  if (skipped.length === 0) return '# nothing skipped\n';
  /** @type {Map<string, Map<string, number>>} */
  const byReason = new Map();
  for (const { reason, file } of skipped) {
    const files = byReason.get(reason) ?? new Map();
    files.set(file, (files.get(file) ?? 0) + 1);
    byReason.set(reason, files);
  }
  const lines = [`# skip reasons (${skipped.length} skipped):`];
  for (const [reason, files] of byReason) {
    const where = [...files].map(([file, count]) => `${count} in ${file}`).join(', ');
    lines.push(`#   ${reason} (${where})`);
  }
  return lines.join('\n') + '\n';
}
