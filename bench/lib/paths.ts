/** Where the bench finds the project and keeps what it generates (bench/out/ is gitignored). */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.join(ROOT, 'bin', 'p-e-relay');
export const BENCH_OUT = path.join(ROOT, 'bench', 'out');
export const WORKERS = path.join(ROOT, 'bench', 'workers');
export const DOCS = path.join(ROOT, 'docs');
