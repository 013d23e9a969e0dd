/**
 * Comments cite the contract, docs/spec.md, by section ("spec" and a
 * section sign, then the number: 8d). Every section cited in the code must
 * be a heading there, and the old citations of a contract outside the
 * repository must all be gone, so a reader can always follow one. Links
 * into spec.md from the docs, and spec.md's own links, must land too.
 *
 * This file writes the section sign as \u00a7 so that it cites nothing itself.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

const SIGN = '\u00a7';
const SPEC = path.join(ROOT, 'docs', 'spec.md');
/** Where code lives that may cite the contract. */
const CODE_DIRS = ['lib', 'bin', 'scripts', 'bench', 'test'];
const CODE_FILE = /\.(?:[cm]?[jt]s)$|^p-e-relay$/;

async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && path.relative(ROOT, file) !== path.join('bench', 'out')) found.push(...(await filesUnder(file)));
    } else if (CODE_FILE.test(entry.name)) found.push(file);
  }
  return found;
}

async function codeFiles(): Promise<string[]> {
  return (await Promise.all(CODE_DIRS.map((d) => filesUnder(path.join(ROOT, d))))).flat();
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

async function anchorsOf(file: string): Promise<Set<string>> {
  const text = await readFile(file, 'utf8');
  return new Set([...text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1]!)));
}

/** The section numbers docs/spec.md has headings for: `## 8d. …`. */
async function specSections(): Promise<Set<string>> {
  const text = await readFile(SPEC, 'utf8');
  return new Set([...text.matchAll(/^## (\d+[a-z]?)\. /gm)].map((m) => m[1]!));
}

test('docs/spec.md keeps the section numbers the code cites, 1 to 13 with 8a to 8d', async () => {
  const sections = await specSections();
  for (const n of ['1', '2', '3', '4', '5', '6', '7', '8', '8a', '8b', '8c', '8d', '9', '10', '11', '12', '13']) {
    assert.ok(sections.has(n), `docs/spec.md has a heading "## ${n}. …"`);
  }
});

test('every section the code cites is a heading of docs/spec.md', async () => {
  const sections = await specSections();
  const unknown: string[] = [];
  let citations = 0;
  for (const file of await codeFiles()) {
    const lines = (await readFile(file, 'utf8')).split('\n');
    lines.forEach((line, i) => {
      for (const m of line.matchAll(new RegExp(`${SIGN}(\\d+[a-z]?)`, 'g'))) {
        citations++;
        if (!sections.has(m[1]!)) unknown.push(`${path.relative(ROOT, file)}:${i + 1}: ${SIGN}${m[1]}`);
      }
    });
  }
  assert.ok(citations > 0, 'the code cites the spec somewhere (else this test checks nothing)');
  assert.deepEqual(unknown, [], 'citations of sections docs/spec.md does not have');
});

test('no comment cites the contract by its old upper-case name, which is not in the repository', async () => {
  // The word and the sign may stand on two lines of one comment.
  const old = new RegExp(`SPEC(?:\\s|\\*|/)*${SIGN}`, 'g');
  const found: string[] = [];
  for (const file of await codeFiles()) {
    const text = await readFile(file, 'utf8');
    for (const m of text.matchAll(old)) found.push(`${path.relative(ROOT, file)}:${text.slice(0, m.index).split('\n').length}`);
  }
  assert.deepEqual(found, [], 'write "spec" and the section: docs/spec.md is the contract');
});

test("links into docs/spec.md and spec.md's own links land on a file and heading that exist", async () => {
  const docs = path.join(ROOT, 'docs');
  const pages = [path.join(ROOT, 'README.md'), ...(await readdir(docs)).filter((f) => f.endsWith('.md')).map((f) => path.join(docs, f))];
  const broken: string[] = [];
  for (const page of pages) {
    const text = await readFile(page, 'utf8');
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    for (const link of links) {
      const [target, anchor] = link.split('#') as [string, string | undefined];
      const file = target === '' ? page : path.resolve(path.dirname(page), target);
      // Every link of spec.md; from the other pages, the links into spec.md.
      if (page !== SPEC && file !== SPEC) continue;
      const exists = await stat(file).then(() => true, () => false);
      if (!exists) broken.push(`${path.relative(ROOT, page)}: ${link} (no such file)`);
      else if (anchor !== undefined && file.endsWith('.md') && !(await anchorsOf(file)).has(anchor)) {
        broken.push(`${path.relative(ROOT, page)}: ${link} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
});
