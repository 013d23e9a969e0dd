/**
 * Is this directory a store? Every command and `serve` asks before it uses
 * one: given any directory, the store would otherwise write `relay-0001`
 * into it, so `append --corpus` with the corpus's parent split a swarm in
 * two, and `serve` on a git checkout started without a word.
 *
 * A directory is a store when it carries anything only a store has:
 * - `.p-e-relay`, the settings `init` writes (committed, mirrored);
 * - the git dotfile pair `init` writes: a `.gitattributes` that keeps git
 *   from converting records (`-text`) and a `.gitignore` naming `.state`
 *   (the shipped ./corpus, a clone of any store, a store made by an older
 *   init);
 * - a `.state/` with an issued log or a mirror mark (a store that has run,
 *   a mirror `mirror` filled);
 * - records (files named `relay-` and digits): an rsync target, an old corpus.
 * An empty directory (or one holding only `.state/`) is made a store, as
 * `init` would make it. Anything else is refused `not_a_store`, naming the
 * `init` line, and a `corpus/` below it if that is a store.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../errors.js';
import { initCorpus } from '../disk/new-corpus.js';
import { corpusPaths } from '../disk/paths.js';
import { isRecordNameOfAnyWidth } from '../disk/record-names.js';

/** Refuses a directory that is not a store; makes an empty one a store (unless `readOnly`: then it is left as it is). */
export async function ensureStore(corpusDir: string, readOnly: boolean): Promise<void> {
  // A store's settings file says so at the cost of one stat; only a directory without one is listed (every
  // process of a swarm opens the store, and a million-name readdir is seconds).
  if (await exists(corpusPaths(corpusDir).settings)) return;
  let names: string[];
  try {
    names = await fs.readdir(corpusDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // no directory at all: the caller says so in its own words
    throw err;
  }
  if (names.every((name) => name === '.state')) {
    if (!readOnly) await initCorpus(corpusDir);
    return;
  }
  if (await isStore(corpusDir, names)) return;
  throw await notAStore(corpusDir, names);
}

async function isStore(corpusDir: string, names: readonly string[]): Promise<boolean> {
  if (names.some(isRecordNameOfAnyWidth)) return true;
  const paths = corpusPaths(corpusDir);
  if (names.includes('.p-e-relay')) return true;
  if (names.includes('.state') && ((await exists(paths.issued)) || (await exists(paths.mirrorMark)))) return true;
  if (!names.includes('.gitattributes') || !names.includes('.gitignore')) return false;
  const [attributes, ignore] = await Promise.all([small(paths.gitattributes), small(paths.gitignore)]);
  return /(^|\s)-text(\s|$)/m.test(attributes) && /^\/?\.state\/?\s*$/m.test(ignore);
}

async function notAStore(corpusDir: string, names: readonly string[]): Promise<RelayError> {
  const dir = path.resolve(corpusDir);
  const below = path.join(dir, 'corpus');
  const hint = names.includes('corpus') && (await isStore(below, await fs.readdir(below).catch(() => []))) ? ` ${below} is one: pass --corpus ${below} if you meant it.` : '';
  const shown = names.slice(0, 3).join(', ') + (names.length > 3 ? ', …' : '');
  return new RelayError(
    'not_a_store',
    `${dir} is not a p-e-relay store: it holds other files (${shown}) and nothing a store has (records, .p-e-relay, or the .gitattributes and ` +
      `.gitignore init writes), so nothing was read or written there.${hint} ` +
      `To make it a store, run \`p-e-relay init --corpus ${dir}\`; or give an empty directory, which becomes one.`,
    { corpus: dir, ...(hint ? { suggested: below } : {}) },
  );
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(() => true, () => false);
}

/** A dotfile's text, at most 4 KiB of it (these are a few lines; a huge or odd file is no marker). */
async function small(file: string): Promise<string> {
  try {
    // Non-blocking: a FIFO named like a dotfile must not hang a server's start.
    const handle = await fs.open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      const buf = Buffer.alloc(4096);
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      return buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return '';
  }
}
