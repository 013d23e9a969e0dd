/**
 * A new corpus: the directory, its `.state/`, its settings and the two git
 * dotfiles. `init` makes one (lib/ops/init.ts, with the keys directory), and
 * so does a command given an empty directory as its corpus
 * (lib/store/store-mark.ts), so that it becomes a store exactly as `init`
 * makes one. Idempotent: on an existing corpus it fills in what is missing
 * and changes nothing else.
 */
import fs from 'node:fs/promises';
import { RelayError } from '../errors.js';
import { DEFAULT_ID_WIDTH, idShape } from '../model/ids.js';
import { corpusPaths } from './paths.js';
import { listRecordIds, listRecordNames } from './record-names.js';
import { formatSettings, readSettings } from './settings.js';

export const CORPUS_GITATTRIBUTES = '# Records are stored byte for byte; git must never convert line endings.\n* -text\n';
export const CORPUS_GITIGNORE = '# Machine-local working state: never committed, never mirrored.\n.state/\n';

/** The corpus half of `init`; `idWidth` only for a corpus that has none yet. */
export async function initCorpus(corpusDir: string, idWidth?: number): Promise<{ corpus: string; idWidth: number; created: string[] }> {
  const cp = corpusPaths(corpusDir);
  const created: string[] = [];
  await fs.mkdir(cp.corpus, { recursive: true });
  // A new store's one-time signature guard has nothing to forget, so its
  // memory begins with the store. A corpus that holds records but no
  // .state/ (a re-clone, `git clean -x`) is left for the hub to treat as
  // memory lost (lib/auth/guard-memory.ts).
  const fresh = !(await exists(cp.state)) && !(await hasRecords(cp.corpus));
  await fs.mkdir(cp.tmp, { recursive: true });
  if (fresh) await fs.mkdir(cp.replay, { recursive: true });

  const existing = await readSettings(cp.corpus);
  const hasSettingsFile = await exists(cp.settings);
  const width = idWidth ?? existing.idWidth;
  idShape(width); // throws RangeError for a width out of range
  if (width !== existing.idWidth) {
    if ((await listRecordIds(cp.corpus, idShape(existing.idWidth))).length > 0 || hasSettingsFile) {
      throw new RelayError('id_width_fixed', `The store at ${cp.corpus} already has id width ${existing.idWidth}; the width is fixed when a store is ` +
        `created. Use a new, empty corpus directory for a store of width ${width}.`);
    }
  }
  if (!hasSettingsFile && (idWidth !== undefined || !(await hasRecords(cp.corpus)))) {
    await fs.writeFile(cp.settings, formatSettings({ idWidth: width }));
    created.push(cp.settings);
  }
  for (const [file, text] of [
    [cp.gitattributes, CORPUS_GITATTRIBUTES],
    [cp.gitignore, CORPUS_GITIGNORE],
  ] as const) {
    if (!(await exists(file))) {
      await fs.writeFile(file, text);
      created.push(file);
    }
  }
  return { corpus: cp.corpus, idWidth: width ?? DEFAULT_ID_WIDTH, created };
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(() => true, () => false);
}

async function hasRecords(dir: string): Promise<boolean> {
  return (await listRecordNames(dir)).length > 0;
}
