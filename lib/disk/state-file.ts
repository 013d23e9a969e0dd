/**
 * The one way a file under `.state/` is read. `.state/` is this machine's
 * working state, and anyone who can write there (a `git pull` carries
 * symlinks, `rsync -a` copies FIFOs, `mkfifo` is one command) can put
 * something there that is not the small regular file a store wrote:
 *
 * - a FIFO: a plain open() blocks until a writer comes, forever, on a
 *   thread of the pool (four such opens and every file operation of the
 *   process waits). O_NONBLOCK opens it at once; fstat says what it is;
 * - a symlink (to /dev/zero, to a huge file, to a secret): O_NOFOLLOW
 *   refuses it, so nothing past the link is ever read;
 * - a regular file far larger than what a store writes there: refused from
 *   its size, and never read past the cap even if it grows while read.
 *
 * What is not a regular file within its cap is `odd`: each caller treats it
 * as absent or false, and replaces it when it writes its own.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import fs from 'node:fs/promises';

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/** What the small files under `.state/` hold is a line or a few: a done mark, a claim, a lock, a mark of a mirror. */
export const SMALL_STATE_BYTES = 4096;

export type StateFile =
  | { kind: 'bytes'; bytes: Buffer; stat: Stats; offset: number }
  | { kind: 'missing' }
  /** `what` completes "it …": "is a symbolic link", "is not a regular file", "is 5000 bytes, over 4096". */
  | { kind: 'odd'; what: string };

export interface StateFileOptions {
  /** At most this many bytes are read (SMALL_STATE_BYTES unless said). */
  max?: number;
  /** A larger file is read from its last `max` bytes rather than refused (an append-only log whose end is what counts). */
  tail?: boolean;
}

function openFailed(err: unknown): StateFile {
  const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
  if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' };
  // O_NOFOLLOW on a symlink: ELOOP (Linux), EMLINK (FreeBSD), EFTYPE (NetBSD).
  if (code === 'ELOOP' || code === 'EMLINK' || code === 'EFTYPE') return { kind: 'odd', what: 'is a symbolic link' };
  return { kind: 'odd', what: `cannot be read (${code})` };
}

function span(stat: Stats, max: number, tail: boolean): { offset: number; length: number } | StateFile {
  if (!stat.isFile()) return { kind: 'odd', what: stat.isDirectory() ? 'is a directory' : 'is not a regular file (a FIFO, a device or a socket)' };
  if (stat.size <= max) return { offset: 0, length: stat.size };
  if (!tail) return { kind: 'odd', what: `is ${stat.size} bytes, over the ${max} such a file can be` };
  return { offset: stat.size - max, length: max };
}

/** The file's bytes, read without following a link, blocking on a FIFO, or reading past `max`. */
export async function readStateFile(file: string, options: StateFileOptions = {}): Promise<StateFile> {
  const max = options.max ?? SMALL_STATE_BYTES;
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, FLAGS);
  } catch (err) {
    return openFailed(err);
  }
  try {
    const stat = await handle.stat();
    const where = span(stat, max, options.tail === true);
    if ('kind' in where) return where;
    // Only the length fstat gave: what grows while it is read is not read.
    const buf = Buffer.allocUnsafe(where.length);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, where.offset + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return { kind: 'bytes', bytes: buf.subarray(0, got), stat, offset: where.offset };
  } catch (err) {
    return { kind: 'odd', what: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'EIO'})` };
  } finally {
    await handle.close().catch(() => {});
  }
}

/** readStateFile, synchronously (for a caller that must answer in the same turn). */
export function readStateFileSync(file: string, options: StateFileOptions = {}): StateFile {
  const max = options.max ?? SMALL_STATE_BYTES;
  let fd: number;
  try {
    fd = openSync(file, FLAGS);
  } catch (err) {
    return openFailed(err);
  }
  try {
    const stat = fstatSync(fd);
    const where = span(stat, max, options.tail === true);
    if ('kind' in where) return where;
    const buf = Buffer.allocUnsafe(where.length);
    let got = 0;
    while (got < buf.length) {
      const bytesRead = readSync(fd, buf, got, buf.length - got, where.offset + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return { kind: 'bytes', bytes: buf.subarray(0, got), stat, offset: where.offset };
  } catch (err) {
    return { kind: 'odd', what: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'EIO'})` };
  } finally {
    try {
      closeSync(fd);
    } catch {}
  }
}

/** A small state file's text: null when it is missing, `odd` (with what it is) when it is anything but a small regular file. */
export async function readStateText(file: string, max = SMALL_STATE_BYTES): Promise<string | null | { odd: string }> {
  const got = await readStateFile(file, { max });
  if (got.kind === 'missing') return null;
  if (got.kind === 'odd') return { odd: got.what };
  return got.bytes.toString('utf8');
}
