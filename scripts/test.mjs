// `npm test`: every test file, four at a time, beside the type check.
//
// node --test sorts the files it is given, which puts test/system/ (the
// longest files: a 62 s wait, chromium, swarms of servers) last, where the
// run ends with one slot busy and the other idle. Here the files run in the
// order given: test/system/ first, then the files that spawn processes, then
// the rest, so the short files fill in at the end. The type check (tsc, ~13 s
// of CPU) runs meanwhile.
//
// Four files at a time on two cores: the files spend much of their time
// waiting on the processes they start (a whole run used ~400 s of CPU in
// 672 s of wall time two at a time), and every file passes with the machine
// far busier than four files make it. Two at a time the run took 672 s at
// load 7-15; four at a time 495 s at load 12-21, the same tests passing.
//
//   node --import tsx scripts/test.mjs [--unit] [FILE...]
//
// The checkout's ./corpus and ./keys (what `npm start` serves) are pictured
// before the run and compared after: a test that touched them fails the run
// (test/support/checkout-guard.mjs).
//
// --unit leaves out test/system/, *.process.test.ts and *.slow.test.ts, and
// the type check (`npm run test:unit`). Files given: only those, in that order.
// The reporter is test/support/skip-summary.mjs, as for `node --test`.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { run } from 'node:test';
import { fileURLToPath } from 'node:url';
import skipSummary from '../test/support/skip-summary.mjs';
import { differences, picture } from '../test/support/checkout-guard.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
const unit = args.includes('--unit');
const given = args.filter((a) => a !== '--unit');

/** Every *.test.ts below test/, at any depth (test/store/<wing>/ mirrors lib/store's wings). */
function allFiles() {
  const found = [];
  const walk = (dir) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const at = path.join(dir, d.name);
      if (d.isDirectory()) walk(at);
      else if (d.name.endsWith('.test.ts')) found.push(at);
    }
  };
  walk(path.join(root, 'test'));
  return found.sort();
}

const system = (f) => f.includes(`${path.sep}test${path.sep}system${path.sep}`);
const spawning = (f) => /\.(process|slow)\.test\.ts$/.test(f);
/** Longest first: system files, then those that spawn processes, then the rest. */
const rank = (f) => (system(f) ? 0 : spawning(f) ? 1 : 2);

let files = given.length ? given.map((f) => path.resolve(f)) : allFiles();
if (unit) files = files.filter((f) => rank(f) === 2);
else if (!given.length) files = files.map((f, i) => [rank(f), i, f]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, , f]) => f);

const typecheck = unit || given.length ? null : typeCheck();

const OWN = ['corpus', 'keys'];
const before = await picture(root, OWN);

let failed = false;
const stream = run({ files, concurrency: 4 });
stream.on('test:fail', () => (failed = true));
for await (const chunk of stream.compose(skipSummary)) process.stdout.write(chunk);

if (typecheck) {
  const { code, output, seconds } = await typecheck;
  if (code === 0) process.stdout.write(`# typecheck: no errors (tsc, ${seconds} s beside the tests)\n`);
  else {
    process.stdout.write(`# typecheck failed (tsc exited ${code}):\n${output}`);
    failed = true;
  }
}
const touched = differences(before, await picture(root, OWN));
if (touched.length > 0) {
  process.stdout.write(`# the run changed the checkout's own ${OWN.join('/ and ')}/ (tests must use temp directories;` +
    ` a hub of yours serving ./corpus meanwhile would also show here):\n${touched.map((l) => `#   ${l}\n`).join('')}`);
  failed = true;
}
if (failed) process.exitCode = 1;

/** tsc over the whole tree (package.json's typecheck), its output kept for the end. */
function typeCheck() {
  const started = Date.now();
  const tsc = spawn(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.json'), '--noEmit'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  tsc.stdout.setEncoding('utf8').on('data', (d) => (output += d));
  tsc.stderr.setEncoding('utf8').on('data', (d) => (output += d));
  return new Promise((resolve) => {
    tsc.on('error', (err) => resolve({ code: -1, output: String(err), seconds: 0 }));
    tsc.on('close', (code) => resolve({ code, output, seconds: ((Date.now() - started) / 1000).toFixed(1) }));
  });
}
