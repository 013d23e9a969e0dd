/**
 * Every package the code imports is one package.json declares: what lib/ and
 * bin/ import (shipped, bundled into dist/) among the dependencies, what the
 * tests, scripts and bench import among either list. A package present in
 * node_modules only as something else's dependency (the 1.x
 * @modelcontextprotocol/sdk, which the Inspector CLI and server-memory bring
 * along) is not there for us to import.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && /\.(ts|mts|mjs)$/.test(entry.name)) out.push(path.join(entry.parentPath, entry.name));
  }
  return out;
}

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`), or null for node: and relative ones. */
function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

async function imported(dirs: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const dir of dirs) {
    for (const file of await sources(dir)) {
      for (const m of (await readFile(file, 'utf8')).matchAll(SPECIFIER)) {
        const pkg = packageOf(m[1]!);
        if (pkg !== null && !found.has(pkg)) found.set(pkg, path.relative(ROOT, file));
      }
    }
  }
  return found;
}

const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };

test('lib/ and bin/ import only packages listed in dependencies', async () => {
  for (const [name, file] of await imported(['lib', 'bin'])) assert.ok(name in pkg.dependencies, `${file} imports ${name}, which is not in dependencies`);
});

test('tests, scripts and the bench import only packages package.json lists', async () => {
  for (const [name, file] of await imported(['test', 'scripts', 'bench'])) {
    if (file.startsWith(path.join('bench', 'out'))) continue;
    assert.ok(name in pkg.dependencies || name in pkg.devDependencies, `${file} imports ${name}, which package.json does not list`);
  }
});

test('every dependency with an install script is named in package.json\'s allowScripts, so npm 11 installs quietly and npm 12 still runs it', async () => {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
  const lock = JSON.parse(await readFile(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
  const scripted = Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript).map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.ok(scripted.includes('esbuild'), 'esbuild places its binary in a postinstall step');
  assert.deepEqual(scripted.filter((name) => pkg.allowScripts?.[name] !== true), [], 'approve them with `npm install-scripts approve <pkg>`');
});
