/**
 * Every relative link in README.md and docs/ (the decision records too)
 * names a file that exists, and every #anchor a heading of the page it
 * points into, spelt as GitHub makes heading anchors. Links inside code
 * (fenced blocks, `inline`) are text, not links, and are left alone.
 */
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/helpers.js';

async function pages(): Promise<string[]> {
  const docs = path.join(ROOT, 'docs');
  const inDocs = (await readdir(docs, { recursive: true })).filter((f) => f.endsWith('.md')).map((f) => path.join(docs, f));
  return [path.join(ROOT, 'README.md'), ...inDocs];
}

/** The page's lines outside fenced code blocks, with their numbers. */
function proseLines(text: string): [number, string][] {
  const out: [number, string][] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced) out.push([i + 1, line]);
  });
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, line] of proseLines(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const words = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replaceAll('`', '');
    const slug = words.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replaceAll(' ', '-');
    const n = seen.get(slug);
    seen.set(slug, (n ?? -1) + 1);
    anchors.add(n === undefined ? slug : `${slug}-${n + 1}`);
  }
  return anchors;
}

test('GitHub anchors: punctuation dropped, spaces kept as hyphens, a repeated heading numbered', () => {
  const anchors = anchorsOf("# Performance: the full tables\n## The append's ceiling (`serve`)\n```\n# not a heading\n```\n## Calls\n## Calls\n");
  assert.deepEqual([...anchors], ['performance-the-full-tables', 'the-appends-ceiling-serve', 'calls', 'calls-1']);
});

test('every relative link and #anchor in README.md and docs/ resolves', async () => {
  const broken: string[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const files = await pages();
  assert.ok(files.length > 15, `pages read: ${files.length}`);
  for (const file of files) {
    for (const [n, line] of proseLines(await readFile(file, 'utf8'))) {
      for (const [, target] of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?|mailto):/.test(target!)) continue;
        const [where, anchor] = target!.split('#') as [string, string | undefined];
        const linked = where === '' ? file : path.resolve(path.dirname(file), where);
        const at = `${path.relative(ROOT, file)}:${n}: ${target}`;
        if (!existsSync(linked)) {
          broken.push(`${at} (no such file)`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(linked).isDirectory() || !linked.endsWith('.md')) {
          broken.push(`${at} (an anchor into a file that is not a page)`);
          continue;
        }
        if (!anchorCache.has(linked)) anchorCache.set(linked, anchorsOf(await readFile(linked, 'utf8')));
        if (!anchorCache.get(linked)!.has(anchor)) broken.push(`${at} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
});
