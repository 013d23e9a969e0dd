/**
 * The text filter's word index on disk (`.state/text-index`), so that the
 * servers of a corpus do not each read every record on their first search:
 * the first to search writes what it read, and the others load it in a
 * fraction of the reads. Like the index snapshot it is `.state/` state, a
 * cache that anyone who can write there can write, so a loader believes it
 * only where the records agree (text-index.ts `loadShared`): each record's
 * row is taken only if its digest is the one the record index holds, and
 * the newest rows are read from their files and compared word for word.
 *
 * Layout, little-endian, every section a whole number of 4-byte words but
 * the last:
 *
 *   magic "PERETXT1" · docs · pairs · words · word bytes   (24 bytes)
 *   ids        docs × int32, ascending: the record of each row
 *   lengths    docs × int32: how many distinct words each row holds
 *   digests    docs × 8 bytes: the first 8 bytes of each record's digest
 *   pool       pairs × int32: each row's word numbers, ascending, row after row
 *   words      the words, UTF-8, each ended by "\n" (a word never holds one)
 */
import { endianness } from 'node:os';
import fs from 'node:fs/promises';
import path from 'node:path';
import { tempName } from '../../disk/paths.js';
import { readStateFileSync } from '../../disk/state-file.js';
import { DIGEST_PREFIX, type TextImage } from '../../model/word-table.js';

const MAGIC = Buffer.from('PERETXT1');
const HEADER = 24;

/** Typed arrays are written as they lie in memory: only where that is little-endian (every platform Node ships for today). */
const LITTLE = endianness() === 'LE';

export function encodeTextImage(image: TextImage): Buffer {
  const docs = image.ids.length;
  const words = Buffer.from(image.words.map((word) => word + '\n').join(''), 'utf8');
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header, 0);
  header.writeUInt32LE(docs, 8);
  header.writeUInt32LE(image.pool.length, 12);
  header.writeUInt32LE(image.words.length, 16);
  header.writeUInt32LE(words.length, 20);
  return Buffer.concat([header, bytesOf(image.ids), bytesOf(image.lengths), image.digests, bytesOf(image.pool), words]);
}

/** The image in a file's bytes, or why it is not one (sizes that do not add up, rows out of order, word numbers out of range). */
export function decodeTextImage(file: Buffer): TextImage | string {
  if (!LITTLE) return 'this machine is not little-endian';
  if (file.length < HEADER || !file.subarray(0, 8).equals(MAGIC)) return 'it is not a text index of this version';
  const docs = file.readUInt32LE(8);
  const pairs = file.readUInt32LE(12);
  const wordCount = file.readUInt32LE(16);
  const wordBytes = file.readUInt32LE(20);
  if (HEADER + docs * (8 + DIGEST_PREFIX) + pairs * 4 + wordBytes !== file.length) return 'its sections do not add up to its size';
  let at = HEADER;
  const ids = int32s(file, at, docs);
  const lengths = int32s(file, (at += docs * 4), docs);
  const digests = new Uint8Array(file.subarray((at += docs * 4), at + docs * DIGEST_PREFIX));
  const pool = int32s(file, (at += docs * DIGEST_PREFIX), pairs);
  const text = file.toString('utf8', (at += pairs * 4));
  const words = text === '' ? [] : text.slice(0, -1).split('\n');
  if (words.length !== wordCount || (wordCount > 0 && !text.endsWith('\n')) || words.some((word) => word === '')) return 'its word list is not what its header says';
  let k = 0;
  for (let i = 0; i < docs; i++) {
    if (ids[i]! <= (i === 0 ? 0 : ids[i - 1]!)) return 'its records are not in ascending order';
    const end = k + lengths[i]!;
    if (lengths[i]! < 0 || end > pairs) return 'its rows do not add up to its pairs';
    for (let p = k; p < end; p++) {
      const w = pool[p]!;
      if (w < 0 || w >= wordCount || (p > k && w <= pool[p - 1]!)) return 'a row names a word out of range or out of order';
    }
    k = end;
  }
  if (k !== pairs) return 'its rows do not add up to its pairs';
  return { words, ids, lengths, digests, pool };
}

/** The image in the file, or why not (none there, not a regular file, over `limit` bytes, not whole). */
export function readTextImage(file: string, limit: number): TextImage | string {
  const read = readStateFileSync(file, { max: limit });
  if (read.kind === 'missing') return 'there is none';
  if (read.kind !== 'bytes') return `it cannot be read (it ${read.kind === 'odd' ? read.what : 'is not whole'})`;
  return decodeTextImage(read.bytes);
}

/** Temp names carry the pid, as the snapshot's do; a sequence of its own. */
let written = 2_000_000_000;

/** Writes the image whole under `tmpDir` and renames it into place: of two writers, each renames a whole file, and the last one wins. */
export async function writeTextImage(file: string, tmpDir: string, image: TextImage): Promise<void> {
  if (!LITTLE) return;
  const temp = path.join(tmpDir, tempName(process.pid, written++));
  try {
    await fs.writeFile(temp, encodeTextImage(image), { flag: 'wx', mode: 0o644 });
    await fs.rename(temp, file);
  } catch (err) {
    await fs.unlink(temp).catch(() => {});
    throw err;
  }
}

function bytesOf(column: Int32Array): Uint8Array {
  return new Uint8Array(column.buffer, column.byteOffset, column.byteLength);
}

/** `count` int32s from `at`, copied (the file's buffer need not be aligned). */
function int32s(file: Buffer, at: number, count: number): Int32Array {
  const out = new Int32Array(count);
  new Uint8Array(out.buffer).set(file.subarray(at, at + count * 4));
  return out;
}
