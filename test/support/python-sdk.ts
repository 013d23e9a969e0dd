/**
 * The official Python SDK (`pip install mcp`, 2.x) in a venv under
 * node_modules/.cache, made once and shared by every test that runs a
 * Python client. `npm test` runs two files at once, so two of them may ask
 * for it together: each builds in a directory of its own and renames it
 * into place, and the one that loses the rename uses the winner's (a venv's
 * python finds its packages relative to itself, so a renamed venv works).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './helpers.js';
import { missing, toolPath } from './needs.js';

const run = promisify(execFile);
const VENV = path.join(ROOT, 'node_modules', '.cache', 'p-e-relay-python-mcp');
export const PYTHON = path.join(VENV, 'bin', 'python');

async function importsMcp(python: string): Promise<boolean> {
  return run(python, ['-c', 'import mcp.client; from mcp import Client']).then(() => true, () => false);
}

/** Makes the venv if needed; returns why it cannot be had, or null when PYTHON is ready. */
export async function pythonSdk(): Promise<string | null> {
  if (existsSync(PYTHON) && (await importsMcp(PYTHON))) return null;
  const python = toolPath('python3-venv');
  if (python === null) return missing(['python3-venv'])!;
  await mkdir(path.dirname(VENV), { recursive: true });
  const building = await mkdtemp(`${VENV}.building-`);
  try {
    try {
      await run(python, ['-m', 'venv', building], { timeout: 120_000 });
    } catch (err) {
      return `python3 -m venv failed (${((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').slice(-1)[0]}); install it with: apt-get install -y python3-venv`;
    }
    try {
      await run(path.join(building, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--retries', '1', '--timeout', '20', 'mcp>=2.3,<3'], { timeout: 300_000 });
    } catch (err) {
      return `needs PyPI: pip install mcp failed: ${((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').slice(-2).join(' ')}`;
    }
    // A stale venv that no longer imports mcp makes way; one another test just renamed into place stays.
    if (existsSync(VENV) && !(await importsMcp(PYTHON))) await rm(VENV, { recursive: true, force: true });
    await rename(building, VENV).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  return (await importsMcp(PYTHON)) ? null : `the venv at ${VENV} does not import mcp`;
}
