/**
 * Reading a file whose name says it is a record, without trusting what kind
 * of file it is. `rsync -a` copies FIFOs and device files, git checks out
 * symlinks, and anyone can `mkfifo corpus/relay-0009`. A plain open() of a
 * FIFO blocks until a writer comes (forever: the start-up scan, `verify` and
 * every read would hang), and reading /dev/zero never ends. Opening with
 * O_NONBLOCK returns at once whatever the file is; fstat then says what was
 * opened, and only a regular file is read. For a regular file O_NONBLOCK
 * changes nothing.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** Thrown for a name that is a FIFO, a directory, a device or a socket: callers treat it as a damaged record. */
export class NotARegularFile extends Error {
  readonly code = 'ENOTREGULAR';
  constructor(file: string) {
    super(`${file} is not a regular file (a FIFO, a directory, a device or a socket), so it is not read as a record`);
  }
}

export async function readRecordFile(file: string): Promise<Buffer> {
  const handle = await fs.open(file, FLAGS);
  try {
    if (!(await handle.stat()).isFile()) throw new NotARegularFile(file);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

export function readRecordFileSync(file: string): Buffer {
  const fd = openSync(file, FLAGS);
  try {
    if (!fstatSync(fd).isFile()) throw new NotARegularFile(file);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
