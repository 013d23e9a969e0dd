/**
 * Creating a store: the corpus directory with the files that make it safe to
 * commit and mirror, and the keys directory. Idempotent: running it on an
 * existing store fills in what is missing and changes nothing else.
 */
import fs from 'node:fs/promises';
import { keyPaths } from '../disk/paths.js';
import { initCorpus } from '../disk/new-corpus.js';

export const KEYS_GITIGNORE = '# HMAC keys are secrets: never commit them.\n*.key\n';

export interface InitResult {
  corpus: string;
  keys: string;
  idWidth: number;
  created: string[];
}

export async function initStore(options: { corpus: string; keys: string; idWidth?: number }): Promise<InitResult> {
  const kp = keyPaths(options.keys);
  const corpus = await initCorpus(options.corpus, options.idWidth);
  await fs.mkdir(kp.keys, { recursive: true, mode: 0o700 });
  const created = [...corpus.created];
  if (!(await exists(kp.gitignore))) {
    await fs.writeFile(kp.gitignore, KEYS_GITIGNORE);
    created.push(kp.gitignore);
  }
  return { corpus: corpus.corpus, keys: kp.keys, idWidth: corpus.idWidth, created };
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(() => true, () => false);
}
