/**
 * A store's settings live in a small dotfile inside the corpus (`.p-e-relay`),
 * written once by `init`, so they travel with rsync and git while `.state/`
 * does not. Today it holds one fact: the id width, fixed at creation. No file
 * means the default of four digits.
 */
import { RelayError } from '../errors.js';
import { DEFAULT_ID_WIDTH, MAX_ID_WIDTH, MIN_ID_WIDTH } from '../model/ids.js';
import { corpusPaths } from './paths.js';
import { NotARecordFile, readRecordFile } from './record-file.js';

export interface StoreSettings {
  idWidth: number;
}

export async function readSettings(corpusDir: string): Promise<StoreSettings> {
  const file = corpusPaths(corpusDir).settings;
  let text: string;
  try {
    // Read without trusting what kind of file it is: a FIFO here would block the server's start.
    text = (await readRecordFile(file)).toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { idWidth: DEFAULT_ID_WIDTH };
    if (err instanceof NotARecordFile) throw new RelayError('bad_settings', `The corpus settings file ${file} cannot be used (${err.why}). ` +
      `Replace it with a text file holding "id-width: N" (or remove it for the default of ${DEFAULT_ID_WIDTH} digits).`);
    throw err;
  }
  return parseSettings(text);
}

export function parseSettings(text: string): StoreSettings {
  const m = /^id-width:\s*(\d+)\s*$/m.exec(text);
  const idWidth = m ? Number(m[1]) : DEFAULT_ID_WIDTH;
  if (idWidth < MIN_ID_WIDTH || idWidth > MAX_ID_WIDTH) {
    throw new RelayError('bad_settings', `The corpus settings file says id-width: ${idWidth}, which is outside ${MIN_ID_WIDTH}–${MAX_ID_WIDTH}. Fix .p-e-relay in the corpus.`);
  }
  return { idWidth };
}

export function formatSettings(settings: StoreSettings): string {
  return `# p-e-relay store settings, fixed when the store was created.\nid-width: ${settings.idWidth}\n`;
}
