/**
 * One mark file: how far an agent's deliveries for one filter set have gone
 * (spec §8d), read and written without trusting what sits at its path.
 *
 *   relay-0042                        every record up to here was delivered (or was not for this set)
 *   named-only-through: relay-0057    at or below this, only records whose to: names the agent
 *   delivered: relay-0050 relay-0061  above the first line, delivered one by one (a push)
 *   filter: to=all,bob                what the set is, for a person reading .state/
 *
 * The first line alone is the whole of a mark `inbox` wrote before marks had
 * filter sets, so those files still read. `.state/` is local, but anything can
 * be put at a mark's path: a symlink must not be followed (nor its target
 * named in a refusal), a FIFO must not hang a read, /dev/zero or a huge file
 * must not be read into memory (record-file.ts's reader, which distrusts a
 * record's path the same way, does all three), and a write must not go
 * through a symlink or to a temp name another user could guess and plant first.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../../errors.js';
import type { IdShape } from '../../model/ids.js';
import { tempBeside } from '../../disk/paths.js';
import { NotARecordFile, readRegularFile } from '../../disk/record-file.js';

export interface Mark {
  /** Every record at or below this id has been delivered, or did not belong to the set. */
  after: number;
  /** Records at or below this id are delivered only when their to: names the agent (a broadcast from before the mark was made is not). */
  namedOnlyThrough: number;
  /** Ids above `after` delivered one at a time (pushes), ascending. */
  delivered: number[];
}

/** A mark is a few lines; anything larger is not one, and is not read. */
export const MAX_MARK_BYTES = 16 * 1024;
/** Single deliveries kept above `after`: past this the lowest are dropped (delivered again at worst, never lost). */
export const MAX_DELIVERED = 512;

/** The refusal for a mark path that holds no mark; it names the path, never what a link there points at. */
export function badMark(file: string, why: string): RelayError {
  return new RelayError('bad_mark', `The mark file ${file} cannot be used: ${why}. Nothing was delivered and the mark did not move. Remove it (rm ` +
    `${JSON.stringify(file)}): the next delivery then starts a new mark.`, { file, why });
}

/** The mark at `file`, or null when there is none. */
export async function readMarkFile(file: string, shape: IdShape): Promise<Mark | null> {
  let bytes: Buffer;
  try {
    bytes = await readRegularFile(file, MAX_MARK_BYTES, 'mark');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    if (err instanceof NotARecordFile) throw badMark(file, err.why);
    throw err;
  }
  return parseMark(bytes.toString('utf8'), file, shape);
}

function parseMark(text: string, file: string, shape: IdShape): Mark {
  const [first = '', ...rest] = text.split('\n');
  const after = shape.parse(first.trim());
  // A short printable first line is shown (a typo is then plain to see); anything else is not echoed.
  const shown = /^[\x20-\x7e]{1,64}$/.test(first.trim()) ? ` "${first.trim()}"` : '';
  if (after === null) throw badMark(file, `it holds${shown || ' text'} where a mark begins with an id of this store (e.g. ${shape.example})`);
  const mark: Mark = { after, namedOnlyThrough: 0, delivered: [] };
  for (const line of rest) {
    const colon = line.indexOf(': ');
    if (colon < 0) continue;
    const key = line.slice(0, colon);
    const value = line.slice(colon + 2).trim();
    if (key === 'named-only-through') mark.namedOnlyThrough = shape.parse(value) ?? 0;
    else if (key === 'delivered') {
      for (const id of value.split(' ')) {
        const n = shape.parse(id);
        if (n !== null && n > after) mark.delivered.push(n);
      }
    }
  }
  mark.delivered = [...new Set(mark.delivered)].sort((a, b) => a - b).slice(-MAX_DELIVERED);
  return mark;
}

/** The file's text: the first line is the mark as `inbox` always wrote it; the rest only when it says something. */
export function formatMark(mark: Mark, shape: IdShape, filterText?: string): string {
  const lines = [shape.format(mark.after)];
  if (mark.namedOnlyThrough > mark.after) lines.push(`named-only-through: ${shape.format(mark.namedOnlyThrough)}`);
  const delivered = mark.delivered.filter((n) => n > mark.after);
  if (delivered.length > 0) lines.push(`delivered: ${delivered.map(shape.format).join(' ')}`);
  if (filterText !== undefined) lines.push(`filter: ${filterText}`);
  return lines.join('\n') + '\n';
}

/**
 * Writes `text` at `file` whole: a temp file beside it under an unguessable
 * name, created exclusively (O_EXCL also refuses to open through a symlink
 * planted there), fsynced, then renamed over the mark. rename() replaces
 * whatever the path held (a symlink is replaced, not followed), so a reader
 * sees the old mark or the new one. A mark that was not there before is a
 * new entry in its directory, which is fsynced too: after a power cut a new
 * mark that vanished would start the set over from the store's head, and the
 * broadcasts delivered before would count as never sent to it. (Replacing an
 * existing mark is not synced: losing that rename delivers again, not less.)
 */
export async function writeMarkFile(file: string, text: string): Promise<void> {
  const isNew = await fs.lstat(file).then(() => false, () => true);
  const temp = tempBeside(file);
  const handle = await fs.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => {});
    await fs.unlink(temp).catch(() => {});
    throw err;
  }
  await handle.close();
  try {
    await fs.rename(temp, file);
  } catch (err) {
    await fs.unlink(temp).catch(() => {});
    if ((err as NodeJS.ErrnoException).code === 'EISDIR') throw badMark(file, 'it is a directory');
    throw err;
  }
  if (isNew) await syncDirectory(path.dirname(file));
}

/** fsyncs a directory that gained an entry; where directories cannot be synced (some network filesystems), nothing more can be done. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'ENOTSUP' && code !== 'EPERM') throw err;
  } finally {
    await handle.close();
  }
}
