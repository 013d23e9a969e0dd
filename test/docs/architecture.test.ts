/**
 * docs/architecture.md's map, held to the code: every relative import in
 * lib/ and bin/ points from a folder to one on a lower floor of the floors
 * table, and inside lib/store/ a wing imports only wings before it in the
 * order the page gives, and of the store's own folder only what it names
 * (never the facade); outside lib/store/, lib/ and bin/ import the store only
 * through the public modules the page names, never a wing. bench/ and test/
 * are not held to it: they may reach into a wing to measure or test it.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

const DOC = path.join(ROOT, 'docs', 'architecture.md');
const RELATIVE = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

interface Import {
  from: string;
  to: string;
}

async function relativeImports(): Promise<Import[]> {
  const out: Import[] = [];
  for (const dir of ['lib', 'bin']) {
    for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true, recursive: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = path.join(entry.parentPath, entry.name);
      for (const m of (await readFile(file, 'utf8')).matchAll(RELATIVE)) {
        out.push({ from: path.relative(ROOT, file), to: path.relative(ROOT, path.resolve(path.dirname(file), m[1]!)).replace(/\.js$/, '.ts') });
      }
    }
  }
  return out;
}

/** The floors table: each room (`lib/model`, `lib/errors.ts`, `bin`) and its floor. */
async function floors(): Promise<Map<string, number>> {
  const doc = await readFile(DOC, 'utf8');
  const rooms = new Map<string, number>();
  for (const row of doc.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)) {
    for (const [, name] of row[2]!.matchAll(/`([^`]+)`/g)) {
      const room = (name!.startsWith('lib/') || name!.startsWith('bin/') ? name! : `lib/${name}`).replace(/\/$/, '');
      rooms.set(room, Number(row[1]));
    }
  }
  return rooms;
}

/** The room a file belongs to: a top-level file of lib/, or its folder under lib/ or bin/. */
function roomOf(file: string): string {
  const parts = file.split(path.sep);
  return parts[0] === 'bin' ? 'bin' : `lib/${parts[1]}`;
}

/** The wings in the page's order: each wing's rank (wings of one rank do not import each other). */
async function wingOrder(): Promise<Map<string, number>> {
  const doc = await readFile(DOC, 'utf8');
  const line = /((?:`[a-z]+\/`(?:, )?\s*←\s*)+`[a-z]+\/`(?:, `[a-z]+\/`)*)/.exec(doc)?.[1];
  assert.ok(line, 'architecture.md gives the wings in import order');
  const ranks = new Map<string, number>();
  line.split('←').forEach((segment, rank) => {
    for (const [, wing] of segment.matchAll(/`([a-z]+)\/`/g)) ranks.set(wing!, rank);
  });
  return ranks;
}

test('docs/architecture.md: every import in lib/ and bin/ points to a lower floor', async () => {
  const rooms = await floors();
  assert.ok(rooms.size >= 14, `the floors table read: ${[...rooms.keys()].join(', ')}`);
  const upward: string[] = [];
  for (const { from, to } of await relativeImports()) {
    const [a, b] = [roomOf(from), roomOf(to)];
    if (a === b) continue;
    assert.ok(rooms.has(a), `${a} (${from}) is on no floor of architecture.md`);
    assert.ok(rooms.has(b), `${b} (${to}) is on no floor of architecture.md`);
    if (rooms.get(b)! >= rooms.get(a)!) upward.push(`${from} → ${to}`);
  }
  assert.deepEqual(upward, []);
});

test('docs/architecture.md: a store wing imports only earlier wings, and never the facade', async () => {
  const ranks = await wingOrder();
  const doc = await readFile(DOC, 'utf8');
  const shared = /wings import (`[^`]+`(?:,? (?:and )?`[^`]+`)*) from the\s+store's own folder/.exec(doc)?.[1];
  assert.ok(shared, 'architecture.md names what wings take from the store folder');
  const allowed = new Set([...shared.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  const wrong: string[] = [];
  for (const { from, to } of await relativeImports()) {
    const [a, b] = [from.split(path.sep), to.split(path.sep)];
    if (a[1] !== 'store' || b[1] !== 'store' || a.length !== 4) continue;
    const wing = a[2]!;
    assert.ok(ranks.has(wing), `lib/store/${wing}/ is not in architecture.md's wing order`);
    if (b.length === 3) {
      if (!allowed.has(b[2]!)) wrong.push(`${from} → ${to}`);
    } else if (b[2] !== wing && !(ranks.get(b[2]!)! < ranks.get(wing)!)) wrong.push(`${from} → ${to}`);
  }
  assert.deepEqual(wrong, []);
});

test('docs/architecture.md: outside lib/store/, code imports only the store\'s public modules, never a wing', async () => {
  const doc = await readFile(DOC, 'utf8');
  const named = /imports the store\s+only through its public modules,?\s+((?:`[^`]+`(?:,| and)?\s*)+)/.exec(doc)?.[1];
  assert.ok(named, 'architecture.md names the store\'s public modules');
  const open = new Set([...named.matchAll(/`([^`]+)`/g)].map((m) => path.join('lib', 'store', m[1]!)));
  assert.ok(open.has(path.join('lib', 'store', 'store.ts')), `the facade is among them: ${[...open].join(', ')}`);
  const inside = `lib${path.sep}store${path.sep}`;
  const wrong: string[] = [];
  for (const { from, to } of await relativeImports()) {
    if (from.startsWith(inside) || !to.startsWith(inside)) continue;
    if (!open.has(to)) wrong.push(`${from} → ${to}`);
  }
  assert.deepEqual(wrong, []);
});
