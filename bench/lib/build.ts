/**
 * Spawned servers run the built bundle (dist/), as users' MCP clients do, so
 * the bench must not measure a stale one: rebuild when any source under lib/
 * or bin/ is newer than dist/cli.js.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from './paths.js';

async function newestSource(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, await newestSource(full));
    else if (/\.(ts|mjs|js)$/.test(entry.name)) newest = Math.max(newest, (await fs.stat(full)).mtimeMs);
  }
  return newest;
}

/** Returns a line saying whether the bundle was rebuilt. */
export async function ensureFreshBuild(): Promise<string> {
  const built = await fs.stat(path.join(ROOT, 'dist', 'cli.js')).then((s) => s.mtimeMs, () => 0);
  const sources = Math.max(await newestSource(path.join(ROOT, 'lib')), await newestSource(path.join(ROOT, 'bin')), (await fs.stat(path.join(ROOT, 'scripts', 'build.mjs'))).mtimeMs);
  if (built >= sources) return 'dist/ is fresh';
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  return 'dist/ was older than the sources: rebuilt with npm run build';
}

/**
 * The start-up floor: a do-nothing MCP server (bench/workers/bare-mcp.ts)
 * bundled the same way as p-e-relay, so "spawn → first tools/list" can be
 * compared with what the SDK and node cost before any store work.
 */
export function bareServerBundle(): Promise<string> {
  return workerBundle('bare-mcp');
}

/** A bench worker (bench/workers/NAME.ts) bundled into one ESM file (bench/out/NAME.mjs), as the bare floor is. */
export async function workerBundle(name: string): Promise<string> {
  const { build } = await import('esbuild');
  const out = path.join(ROOT, 'bench', 'out', `${name}.mjs`);
  await build({
    entryPoints: [path.join(ROOT, 'bench', 'workers', `${name}.ts`)],
    outfile: out,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    banner: { js: "import { createRequire as __pe_createRequire } from 'node:module'; const require = __pe_createRequire(import.meta.url);" },
  });
  return out;
}
