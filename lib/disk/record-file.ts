/**
 * Reading a file whose name says it is a record, without trusting what kind
 * of file it is. `rsync -a` copies FIFOs, devices and symlinks, git checks
 * out symlinks, and anyone can `mkfifo corpus/relay-0009`:
 *
 * - A plain open() of a FIFO blocks until a writer comes (forever: the
 *   start-up scan, `verify` and every read would hang), and reading
 *   /dev/zero never ends. Opening with O_NONBLOCK returns at once whatever
 *   the file is; fstat then says what was opened, and only a regular file is
 *   read. For a regular file O_NONBLOCK changes nothing.
 * - A symlink named like a record would serve another file's bytes as
 *   PRESENT (a key, /etc/passwd, a 512 MiB file). O_NOFOLLOW refuses it.
 * - A regular file far bigger than any record (four unsigned GETs of a
 *   512 MiB one took a hub from 68 MB to 2.17 GB) is refused from its size,
 *   and never read past the record limit plus room for the deposit header,
 *   even if it grows while being read.
 *
 * Every refusal is a NotARecordFile, which callers treat as a damaged record.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import fs from 'node:fs/promises';
import { DEFAULT_MAX_RECORD_BYTES } from '../model/record.js';

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/** Room for the deposit header above the record bytes (its lines are a few hundred bytes). */
export const DEPOSIT_HEADER_ALLOWANCE = 4096;

/** A name that is not a readable record: not a regular file, a symlink, or larger than any record can be. */
export class NotARecordFile extends Error {
  readonly code = 'ENOTRECORD';
  constructor(
    file: string,
    /** Why, as a clause: "it is a symbolic link". */
    readonly why: string,
  ) {
    super(`${file} is not read as a record: ${why}`);
  }
}

function opened(file: string, err: unknown): never {
  // O_NOFOLLOW on a symlink: ELOOP (Linux), EMLINK (FreeBSD), EFTYPE (NetBSD).
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'EMLINK' || code === 'EFTYPE') throw new NotARecordFile(file, 'it is a symbolic link');
  throw err;
}

function checkKind(file: string, stat: { isFile(): boolean; size: number }, limit: number, what = 'record'): void {
  if (!stat.isFile()) throw new NotARecordFile(file, 'it is not a regular file (a FIFO, a directory, a device or a socket)');
  if (stat.size > limit) throw new NotARecordFile(file, `it is ${stat.size} bytes, larger than any ${what} here can be (${limit})`);
}

function tooLong(file: string, limit: number, what = 'record'): NotARecordFile {
  return new NotARecordFile(file, `it grew past ${limit} bytes while being read, larger than any ${what} here can be`);
}

/** The file's bytes; `maxRecordBytes` is the store's record limit (the deposit header's room is added). */
export function readRecordFile(file: string, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES): Promise<Buffer> {
  return readRegularFile(file, maxRecordBytes + DEPOSIT_HEADER_ALLOWANCE);
}

/**
 * The bytes of a file that must be a small regular one (a record, an
 * agent's mark), with the same distrust: never a symlink followed, a FIFO
 * blocked on, or more than `limit` bytes read. `what` names it in the
 * NotARecordFile's reason.
 */
export async function readRegularFile(file: string, limit: number, what = 'record'): Promise<Buffer> {
  const handle = await fs.open(file, FLAGS).catch((err: unknown) => opened(file, err));
  try {
    const stat = await handle.stat();
    checkKind(file, stat, limit, what);
    // One byte more than the size, to see the end (or that it grew).
    const buf = Buffer.allocUnsafe(Math.min(stat.size, limit) + 1);
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, total, buf.length - total, total);
      if (bytesRead === 0) return buf.subarray(0, total);
      total += bytesRead;
      if (total === buf.length) return Buffer.concat([buf, await readRest(handle, total, limit, file, what)]);
    }
  } finally {
    await handle.close();
  }
}

/** The rare file that grew after fstat: the rest, up to the limit. */
async function readRest(handle: fs.FileHandle, from: number, limit: number, file: string, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = from;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(65_536, limit + 1 - total));
    if (chunk.length === 0) throw tooLong(file, limit, what);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
    if (bytesRead === 0) return Buffer.concat(chunks);
    chunks.push(chunk.subarray(0, bytesRead));
    total += bytesRead;
    if (total > limit) throw tooLong(file, limit, what);
  }
}

export function readRecordFileSync(file: string, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES): Buffer {
  return readRegularFileSync(file, maxRecordBytes + DEPOSIT_HEADER_ALLOWANCE);
}

/** readRegularFile's synchronous twin: the same distrust, for a reader that cannot wait. */
function readRegularFileSync(file: string, limit: number, what = 'record'): Buffer {
  let fd: number;
  try {
    fd = openSync(file, FLAGS);
  } catch (err) {
    opened(file, err);
  }
  try {
    const stat = fstatSync(fd);
    checkKind(file, stat, limit, what);
    const chunks: Buffer[] = [];
    let total = 0;
    // First the size and one byte more, to see the end; then, for the rare file that grew, the rest up to the limit.
    for (let room = Math.min(stat.size, limit) + 1; ; room = Math.min(65_536, limit + 1 - total)) {
      if (room === 0) throw tooLong(file, limit, what);
      const chunk = Buffer.allocUnsafe(room);
      let filled = 0;
      while (filled < room) {
        const bytesRead = readSync(fd, chunk, filled, room - filled, total + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      chunks.push(chunk.subarray(0, filled));
      total += filled;
      if (total > limit) throw tooLong(file, limit, what);
      if (filled < room) return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * How many bytes the record in this file holds (below its deposit header),
 * read from the file's size and its head only: what a wait item whose bytes
 * were omitted says, without reading a record that did not fit. Null when
 * the head holds no end of a deposit header (the file is not whole).
 */
export async function recordSizeOf(file: string, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES): Promise<number | null> {
  const handle = await fs.open(file, FLAGS).catch((err: unknown) => opened(file, err));
  try {
    const stat = await handle.stat();
    checkKind(file, stat, maxRecordBytes + DEPOSIT_HEADER_ALLOWANCE);
    const head = Buffer.allocUnsafe(Math.min(stat.size, DEPOSIT_HEADER_ALLOWANCE));
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    // A whole deposit header has its four required lines before the `---` line, so it never starts the file.
    const end = head.subarray(0, bytesRead).indexOf(HEADER_END);
    return end === -1 ? null : stat.size - (end + HEADER_END.length);
  } finally {
    await handle.close();
  }
}

const HEADER_END = Buffer.from('\n---\n');

/**
 * The first `into.length` bytes of a file named like a record, into `into`,
 * and how many there were: one open, one read, one close (no fstat). The
 * same distrust as above: never a symlink followed or a FIFO blocked on;
 * what is not a regular file errs, or fills `into` (read it the full way).
 */
export function readRecordHeadSync(file: string, into: Buffer): number {
  const fd = openSync(file, FLAGS);
  try {
    return readSync(fd, into, 0, into.length, 0);
  } finally {
    closeSync(fd);
  }
}

/**
 * What the file named like a record is now (inode, size, change and
 * modification times, the link itself, never followed), or null when there
 * is none: a reader that found it damaged reads it again only once this
 * changes. Throws on any other error (the caller then simply reads again).
 */
export function recordFileStamp(file: string): string | null {
  const stat = lstatSync(file, { bigint: true, throwIfNoEntry: false });
  return stat ? `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}` : null;
}

/** How a store reads record files: the disk's functions above, unless a test passes its own (to count the reads). */
export interface RecordReader {
  read(file: string, maxRecordBytes?: number): Promise<Buffer>;
  readSync(file: string, maxRecordBytes?: number): Buffer;
  readHeadSync(file: string, into: Buffer): number;
  sizeOf(file: string, maxRecordBytes?: number): Promise<number | null>;
}

export const diskRecords: RecordReader = { read: readRecordFile, readSync: readRecordFileSync, readHeadSync: readRecordHeadSync, sizeOf: recordSizeOf };
