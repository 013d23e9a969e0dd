// The checkout's own ./corpus and ./keys belong to whoever runs `npm start`
// there, and a test run must leave them as it found them: a test that ran
// the CLI from the checkout without --corpus once put its agents on the
// roster `npm start` serves. scripts/test.mjs takes a picture of both
// directories before the run and compares after; any difference fails it.
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/** Every entry below each of `dirs` (relative to `root`), with its type, size and mtime; an absent directory is recorded as absent. */
export async function picture(root, dirs) {
  const seen = new Map();
  const walk = async (rel) => {
    let st;
    try {
      st = await lstat(path.join(root, rel));
    } catch (err) {
      if (err.code === 'ENOENT') return;
      throw err;
    }
    const kind = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : st.isFile() ? 'file' : 'other';
    // A directory's own mtime is left out: its entries say what changed in it, by name.
    seen.set(rel, kind === 'dir' ? 'dir' : `${kind} ${st.size} bytes, modified ${st.mtime.toISOString()}`);
    if (kind === 'dir') for (const name of (await readdir(path.join(root, rel))).sort()) await walk(path.join(rel, name));
  };
  for (const dir of dirs) await walk(dir);
  return seen;
}

/** The lines that say how `after` differs from `before`: none when they are the same. */
export function differences(before, after) {
  const lines = [];
  for (const [rel, was] of before) {
    if (!after.has(rel)) lines.push(`removed ${rel} (was ${was})`);
    else if (after.get(rel) !== was) lines.push(`changed ${rel}: ${was} -> ${after.get(rel)}`);
  }
  for (const [rel, now] of after) if (!before.has(rel)) lines.push(`added ${rel} (${now})`);
  return lines;
}
