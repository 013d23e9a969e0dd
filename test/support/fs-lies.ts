/**
 * The LD_PRELOAD shim test/fixtures/fs-lies.c, built once per test file with
 * the machine's cc: it makes a local corpus answer link() the way network
 * filesystems do (see the C file for its modes).
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from './helpers.js';
import { missing, toolPath } from './needs.js';

const run = promisify(execFile);
let shimBuilt: Promise<string | null> | null = null;

/** The shim's path; null (and the test skips, saying why) without a C compiler. */
export function shim(t: TestContext): Promise<string | null> {
  return (shimBuilt ??= (async () => {
    const out = path.join(await mkdtemp(path.join(os.tmpdir(), 'pe-relay-shim-')), 'fs-lies.so');
    process.on('exit', () => rmSync(path.dirname(out), { recursive: true, force: true }));
    const cc = toolPath('cc');
    if (cc === null) return null;
    await run(cc, ['-shared', '-fPIC', '-O1', '-o', out, path.join(ROOT, 'test/fixtures/fs-lies.c'), '-ldl']);
    return out;
  })()).then((so) => {
    if (so === null) t.skip(`${missing(['cc'])} (to build the LD_PRELOAD shim)`);
    return so;
  });
}
