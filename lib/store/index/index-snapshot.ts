/**
 * The index snapshot, `.state/index`: the record index of some process,
 * written after it had read the corpus, so that the next process to start
 * loads it instead of reading (and hashing) every record again. It is a
 * cache of what the files say and never the truth: the store checks it
 * against the directory listing and the issued log before answering from it
 * (its high-water mark is not read, and its idempotency keys answer only
 * where the record's header carries them),
 * reads what it lacks, drops what the disk lost, and throws it away whole
 * when anything about it is off. Deleting it (`rm -rf .state`, `git clean
 * -x`) costs one full scan.
 *
 * The file is written whole under `.state/tmp/` and renamed over the old
 * one, so a reader sees one writer's file or another's, never a mix; a torn
 * or foreign file fails its length or checksum and is not used.
 *
 * Layout (little-endian; every section starts aligned to its element size):
 *
 *   0   "PERELIDX"   magic
 *   8   u32          FORMAT: bumped whenever the layout or the index's columns change
 *   12  u32          the store's id width
 *   16  u32          records
 *   20  u32          named ids, all records together
 *   24  u32          high-water mark when written
 *   28  u32          highest id in the issued log when written
 *   32  u32          bytes of the string table (JSON)
 *   36  u32          bytes of the odd texts (JSON)
 *   40  u32          CRC-32 of everything after the header
 *   44  u32          bytes of the idempotency keys (JSON: [id, scope] pairs)
 *   48  …64          zero
 *   64  f64 × 6      the directory stamp: present (1 or 0), dev, ino, mtime, ctime (ms), when taken (ms)
 *   112 f64[records] deposited-at; then i32 ids, u32 kind, from, to, deposited-by,
 *       i32 named; then u8 flags, u8 named counts, 32 bytes of digest per record;
 *       then the string table, the odd texts and the idempotency keys
 */
import { crc32 } from 'node:zlib';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { IndexImage } from '../../model/record-index.js';
import { tempName } from '../../disk/paths.js';
import { readStateFile } from '../../disk/state-file.js';

const MAGIC = Buffer.from('PERELIDX');
/** Bump when IndexImage, this layout or the key scopes it carries (idempotency-keys.ts) change: a snapshot of another format is rebuilt, never read. */
export const SNAPSHOT_FORMAT = 4;
const HEADER = 64;
const STAMP_BYTES = 48;
const DIGEST_BYTES = 32;
/** A snapshot is about 100 bytes a record and its strings: this is millions of records; a larger file is not one we wrote. */
export const MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024;

/**
 * The corpus directory's identity and times when its listing matched the
 * snapshot's ids. Kept in the layout (a file of this format written with one
 * still reads), but written as none and never believed: the file is
 * `.state/` state anyone who can write there can write, stamp and all, so
 * a loader always lists the directory (snapshot-keeper.ts).
 */
export interface DirectoryStamp {
  dev: number;
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  /** Date.now() when the directory was looked at. */
  takenAt: number;
}

export interface Snapshot {
  image: IndexImage;
  stamp: DirectoryStamp | null;
  width: number;
  /** The issued log's highest id when the snapshot was written. */
  issued: number;
  /** The idempotency keys of held records (spec §8b): [id, scope] (see idempotency-keys.ts). */
  keys: [number, string][];
}

/** Why a snapshot file was not used (for the log), or the snapshot. */
export type SnapshotRead = { snapshot: Snapshot } | { refused: string };

export function encodeSnapshot(snapshot: Snapshot): Buffer {
  const { image } = snapshot;
  const count = image.ids.length;
  const strings = Buffer.from(JSON.stringify(image.strings), 'utf8');
  const odd = Buffer.from(JSON.stringify(image.odd), 'utf8');
  const keys = Buffer.from(JSON.stringify(snapshot.keys), 'utf8');
  const { stamp } = snapshot;
  const stampBlock = new Float64Array(stamp ? [1, stamp.dev, stamp.ino, stamp.mtimeMs, stamp.ctimeMs, stamp.takenAt] : [0, 0, 0, 0, 0, 0]);
  const sections: Uint8Array[] = [
    view(stampBlock),
    view(image.depositedAt), view(image.ids), view(image.kind), view(image.from), view(image.to), view(image.depositedBy), view(image.named),
    image.flags, image.namedCount, image.digest, strings, odd, keys,
  ];
  const body = Buffer.concat(sections);
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header, 0);
  header.writeUInt32LE(SNAPSHOT_FORMAT, 8);
  header.writeUInt32LE(snapshot.width, 12);
  header.writeUInt32LE(count, 16);
  header.writeUInt32LE(image.named.length, 20);
  header.writeUInt32LE(image.highWater, 24);
  header.writeUInt32LE(snapshot.issued, 28);
  header.writeUInt32LE(strings.length, 32);
  header.writeUInt32LE(odd.length, 36);
  header.writeUInt32LE(crc32(body), 40);
  header.writeUInt32LE(keys.length, 44);
  return Buffer.concat([header, body]);
}

/** Reads a snapshot's bytes back, or says why they cannot be used. */
export function decodeSnapshot(file: Buffer, width: number): SnapshotRead {
  if (file.length < HEADER || !file.subarray(0, 8).equals(MAGIC)) return { refused: 'it is not an index snapshot' };
  const format = file.readUInt32LE(8);
  if (format !== SNAPSHOT_FORMAT) return { refused: `it is of format ${format}, written by another version (this one reads ${SNAPSHOT_FORMAT})` };
  if (file.readUInt32LE(12) !== width) return { refused: `it is for ids of width ${file.readUInt32LE(12)}, and this store's are ${width}` };
  const count = file.readUInt32LE(16);
  const namedTotal = file.readUInt32LE(20);
  const stringBytes = file.readUInt32LE(32);
  const oddBytes = file.readUInt32LE(36);
  const keyBytes = file.readUInt32LE(44);
  const expected = HEADER + STAMP_BYTES + count * (8 + 4 * 5 + 1 + 1 + DIGEST_BYTES) + namedTotal * 4 + stringBytes + oddBytes + keyBytes;
  if (file.length !== expected) return { refused: `it is ${file.length} bytes where its header promises ${expected} (torn, or cut short)` };
  if (crc32(file.subarray(HEADER)) !== file.readUInt32LE(40)) return { refused: 'its checksum does not match (torn or damaged)' };
  // Typed arrays need aligned offsets; a Buffer may start anywhere in its memory.
  const bytes = file.byteOffset % 8 === 0 ? file : Buffer.from(file);
  let at = HEADER;
  const take = <T>(make: (buffer: ArrayBuffer, offset: number, length: number) => T, length: number, size: number): T => {
    const column = make(bytes.buffer as ArrayBuffer, bytes.byteOffset + at, length);
    at += length * size;
    return column;
  };
  const stampBlock = take((b, o, l) => new Float64Array(b, o, l), 6, 8);
  const stamp: DirectoryStamp | null = stampBlock[0] === 1 ? { dev: stampBlock[1]!, ino: stampBlock[2]!, mtimeMs: stampBlock[3]!, ctimeMs: stampBlock[4]!, takenAt: stampBlock[5]! } : null;
  const depositedAt = take((b, o, l) => new Float64Array(b, o, l), count, 8);
  const ids = take((b, o, l) => new Int32Array(b, o, l), count, 4);
  const kind = take((b, o, l) => new Uint32Array(b, o, l), count, 4);
  const from = take((b, o, l) => new Uint32Array(b, o, l), count, 4);
  const to = take((b, o, l) => new Uint32Array(b, o, l), count, 4);
  const depositedBy = take((b, o, l) => new Uint32Array(b, o, l), count, 4);
  const named = take((b, o, l) => new Int32Array(b, o, l), namedTotal, 4);
  const flags = take((b, o, l) => new Uint8Array(b, o, l), count, 1);
  const namedCount = take((b, o, l) => new Uint8Array(b, o, l), count, 1);
  const digest = take((b, o, l) => new Uint8Array(b, o, l), count * DIGEST_BYTES, 1);
  let strings: unknown;
  let odd: unknown;
  let keys: unknown;
  try {
    strings = JSON.parse(bytes.toString('utf8', at, (at += stringBytes)));
    odd = JSON.parse(bytes.toString('utf8', at, (at += oddBytes)));
    keys = JSON.parse(bytes.toString('utf8', at, (at += keyBytes)));
  } catch {
    return { refused: 'its string table does not parse' };
  }
  if (!Array.isArray(strings) || !Array.isArray(odd) || !Array.isArray(keys)) return { refused: 'its string table does not parse' };
  if (!keys.every((k) => Array.isArray(k) && Number.isInteger(k[0]) && typeof k[1] === 'string')) return { refused: 'its idempotency keys do not parse' };
  const image: IndexImage = {
    highWater: file.readUInt32LE(24),
    ...{ ids, flags, kind, from, to, depositedBy, depositedAt, digest, namedCount, named },
    strings: strings as string[],
    odd: odd as IndexImage['odd'],
  };
  return { snapshot: { image, stamp, width, issued: file.readUInt32LE(28), keys: keys as [number, string][] } };
}

/** Reads the snapshot file; a missing one is simply refused. */
export async function readSnapshot(file: string, width: number): Promise<SnapshotRead> {
  const got = await readStateFile(file, { max: MAX_SNAPSHOT_BYTES });
  if (got.kind === 'missing') return { refused: 'there is none' };
  if (got.kind === 'odd') return { refused: `it ${got.what}` };
  return decodeSnapshot(got.bytes, width);
}

/** The record count and high-water mark in the snapshot file now, from its header alone (null when there is no usable one). */
export async function snapshotHeader(file: string, width: number): Promise<{ records: number; highWater: number } | null> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW);
    if (!(await handle.stat()).isFile()) return null;
    const header = Buffer.alloc(HEADER);
    const { bytesRead } = await handle.read(header, 0, HEADER, 0);
    if (bytesRead < HEADER || !header.subarray(0, 8).equals(MAGIC) || header.readUInt32LE(8) !== SNAPSHOT_FORMAT || header.readUInt32LE(12) !== width) return null;
    return { records: header.readUInt32LE(16), highWater: header.readUInt32LE(24) };
  } catch {
    return null;
  } finally {
    await handle?.close();
  }
}

/**
 * Temp names carry the pid (so `verify --clean` can tell a live writer's from
 * a stray one); a sequence far from publish's keeps them apart from records'.
 */
let written = 1_000_000_000;

/**
 * Writes the snapshot whole under `tmpDir` and renames it into place: two
 * processes writing at once each rename a whole file, and the last one wins.
 */
export async function writeSnapshot(file: string, tmpDir: string, snapshot: Snapshot): Promise<void> {
  const temp = path.join(tmpDir, tempName(process.pid, written++));
  try {
    await fs.writeFile(temp, encodeSnapshot(snapshot), { flag: 'wx' });
    await fs.rename(temp, file);
  } catch (err) {
    await fs.unlink(temp).catch(() => {});
    throw err;
  }
}

function view(column: Int32Array | Uint32Array | Float64Array): Uint8Array {
  return new Uint8Array(column.buffer, column.byteOffset, column.byteLength);
}
