/** A store's record reader that counts the files read through it, by name, for tests that hold a process to its reads. */
import path from 'node:path';
import { diskRecords, type RecordReader } from '../../lib/disk/record-file.js';

/** A reader that counts the record files read through it, by name (a look for a name not there yet reads nothing). */
export function countingReader(): { reader: RecordReader; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const count = <T>(file: string, bytes: T): T => {
    const name = path.basename(file);
    reads.set(name, (reads.get(name) ?? 0) + 1);
    return bytes;
  };
  const reader: RecordReader = {
    read: async (file, max) => count(file, await diskRecords.read(file, max)),
    readSync: (file, max) => count(file, diskRecords.readSync(file, max)),
    readHeadSync: (file, into) => count(file, diskRecords.readHeadSync(file, into)),
    sizeOf: (file, max) => diskRecords.sizeOf(file, max),
  };
  return { reader, reads };
}
