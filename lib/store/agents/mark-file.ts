/**
 * One mark file: how far an agent's deliveries for one filter set have gone
 * (spec §8d), read and written without trusting what sits at its path.
 *
 *   relay-0042                        every record up to here was delivered (or was not for this set)
 *   named-only-through: relay-0037    the agent's first start: at or below it, only records whose to: names the agent
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
  /** The agent's first start: records at or below it are delivered (and receipted) only when their to: names the agent. */
  namedOnlyThrough: number;
  /** Ids above `after` delivered one at a time (pushes), ascending. */
  delivered: number[];
}

/** A mark is a few lines; anything larger is not one, and is not read. */
export const MAX_MARK_BYTES = 16 * 1024;
/** Single deliveries kept above `after`: past this the lowest are dropped (delivered again at worst, never lost). */
export const MAX_DELIVERED = 512;

/** The `filter:` line says which set a mark is for a person reading .state/; past this many characters it is cut (the file name is the key). */
export const MAX_FILTER_LINE = 512;

/**
 * The refusal for a mark path that holds no mark. `shown` is the path as the
 * reader may see it: an agent's own mark is named from the corpus
 * (`.state/marks/bob/to=all,bob`), never by the hub's absolute path, since the
 * refusal can reach a remote caller; and never what a link there points at.
 */
export function badMark(shown: string, why: string): RelayError {
  return new RelayError('bad_mark', `The mark file ${shown} cannot be used: ${why}. Nothing was delivered and the mark did not move. Remove it (rm ` +
    `${JSON.stringify(shown)}${shown.startsWith('.state/') ? ' in the corpus directory' : ''}): the next delivery then starts a new mark.`, { file: shown, why });
}

/** The mark at `file`, or null when there is none; a refusal names it as `shown`. */
export async function readMarkFile(file: string, shape: IdShape, shown: string = file): Promise<Mark | null> {
  let bytes: Buffer;
  try {
    bytes = await readRegularFile(file, MAX_MARK_BYTES, 'mark');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    if (err instanceof NotARecordFile) throw badMark(shown, err.why);
    throw err;
  }
  return parseMark(bytes.toString('utf8'), shown, shape);
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

/**
 * The file's text: the first line is the mark as `inbox` always wrote it; the
 * rest only when it says something. `named-only-through` stays for good once
 * the mark has a start, even after the first line passes it: receipts read
 * it to tell a broadcast from before the agent's start (never delivered)
 * from one after. At most MAX_DELIVERED ids and a filter line of
 * MAX_FILTER_LINE characters: well under MAX_MARK_BYTES, so nothing is
 * written that the reader would refuse.
 */
export function formatMark(mark: Mark, shape: IdShape, filterText?: string): string {
  const lines = [shape.format(mark.after)];
  if (mark.namedOnlyThrough > 0) lines.push(`named-only-through: ${shape.format(mark.namedOnlyThrough)}`);
  const delivered = mark.delivered.filter((n) => n > mark.after).slice(-MAX_DELIVERED);
  if (delivered.length > 0) lines.push(`delivered: ${delivered.map(shape.format).join(' ')}`);
  if (filterText !== undefined) lines.push(`filter: ${filterText.length > MAX_FILTER_LINE ? filterText.slice(0, MAX_FILTER_LINE) + '…' : filterText}`);
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
export async function writeMarkFile(file: string, text: string, shown: string = file): Promise<void> {
  // The reader refuses a mark past MAX_MARK_BYTES: writing one would lock the set out for good.
  if (Buffer.byteLength(text) > MAX_MARK_BYTES) throw new RelayError('internal', `A mark of ${Buffer.byteLength(text)} bytes was not written: a mark is at most ${MAX_MARK_BYTES}. Nothing moved; report this.`);
  const isNew = await fs.lstat(file).then(() => false, () => true);
  const temp = await durableTemp(file, text);
  try {
    await fs.rename(temp, file);
  } catch (err) {
    await fs.unlink(temp).catch(() => {});
    if ((err as NodeJS.ErrnoException).code === 'EISDIR') throw badMark(shown, 'it is a directory');
    throw err;
  }
  if (isNew) await syncDirectory(path.dirname(file));
}

/** `text` written and fsynced under a fresh temp name beside `file` (never through a link), for a rename or link into place. */
async function durableTemp(file: string, text: string): Promise<string> {
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
  return temp;
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

/**
 * Writes `text` at `file` only if nothing is there: written whole under a
 * temp name, then linked to `file` (link() fails if the name exists, so of
 * two processes at once exactly one writes it). False when one was there.
 */
export async function createMarkFile(file: string, text: string): Promise<boolean> {
  const temp = await durableTemp(file, text);
  try {
    await fs.link(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await fs.unlink(temp).catch(() => {});
  }
  await syncDirectory(path.dirname(file));
  return true;
}
