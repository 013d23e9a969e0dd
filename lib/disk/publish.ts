/**
 * Publishing one file so that nobody ever sees it half-written and nobody
 * can overwrite what is there:
 *
 *   1. write the whole file under .state/tmp/ and fsync it;
 *   2. link() it to its final name: the kernel refuses with EEXIST if the name
 *      is taken, which makes the create exclusive across every process (and,
 *      on a shared filesystem, every host: the file server decides). What
 *      link() answered is checked against what the target holds;
 *   3. fsync the directory, so the new name survives a power cut, and
 *      unlink the temp name.
 *
 * The caller runs the three in order (`stage`, `linkExclusive`, `settle`)
 * and does between them what must follow a taken name at once: no step
 * calls back into it.
 *
 * A crash at any point leaves at most a stray temp file, never a partial record.
 */
import { constants as fsc, linkSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { lostConnectionCode } from './lost-mount.js';
import { tempName } from './paths.js';
import { NotARecordFile, readRecordFile } from './record-file.js';
import { ReplaceableHandle } from './replaceable-handle.js';

let seq = 0;

/** Where a publish writes its temp file, and what it tells of one it could not remove. */
export interface PublishInto {
  /** The temp directory: on the target's filesystem, for link(). */
  tmpDir: string;
  /**
   * Directories made again, in order, when the temp directory is missing
   * (`git clean -x` removes what .gitignore names, a restored copy may lack
   * it), before one more try. Never the target's own directory: one that is
   * gone stays a refusal, not a fresh empty directory.
   */
  remake?: readonly string[];
  /** Synced once the name is taken, so that it survives a power cut. */
  dirSync: DirectorySync;
  /** A temp file that could not be removed (the mount went away): to remove later. */
  stranded?: (file: string, err: unknown, creating?: boolean) => void;
  log?: Logger;
}

/**
 * The first step of a publish: the whole file written and fsynced under a
 * fresh temp name in `into.tmpDir` (made again once if it is missing), its
 * path answered. The caller then takes a name for it with `linkExclusive`
 * (trying as many names as it must) and ends with `settle`; a failure in
 * between leaves at most a stray temp file, never a partial file.
 */
export function stage(bytes: Uint8Array, into: PublishInto): Promise<string> {
  return writeTempRemaking(bytes, into);
}

/**
 * The last step: when a name was taken, the directory fsynced so that it
 * survives a power cut; then the temp name removed (told to `stranded` when
 * it cannot be). Rejects when the sync fails, after the temp name is gone.
 */
export async function settle(temp: string, into: PublishInto, linked: boolean): Promise<void> {
  try {
    if (linked) await into.dirSync.sync();
  } finally {
    await fs.unlink(temp).catch((err: unknown) => into.stranded?.(temp, err));
  }
}

async function writeTempRemaking(bytes: Uint8Array, into: PublishInto): Promise<string> {
  try {
    return await writeTemp(into.tmpDir, bytes, undefined, into.stranded);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !into.remake) throw err;
    for (const dir of into.remake) {
      await fs.mkdir(dir).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
    }
    into.log?.info(`${into.tmpDir} was missing; made it again`);
    return await writeTemp(into.tmpDir, bytes, undefined, into.stranded);
  }
}

/**
 * The first step alone, for a file whose name is taken some other way (an
 * idempotency claim, a key): writes bytes to a fresh temp file in `tmpDir`,
 * fsyncs it, and returns its path. When a write fails and the half-written file cannot be removed either
 * (the mount went away), `stranded` hears of it, to remove it later.
 */
export async function writeTemp(tmpDir: string, bytes: Uint8Array, mode = 0o444, stranded?: (file: string, err: unknown, creating?: boolean) => void): Promise<string> {
  const file = path.join(tmpDir, tempName(process.pid, seq++));
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, mode);
  } catch (err) {
    // Over a network mount the file server may have made the file and the answer been lost with the connection.
    stranded?.(file, err, true);
    throw err;
  }
  try {
    let written = 0;
    while (written < bytes.length) {
      const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
      written += bytesWritten;
    }
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => {});
    await fs.unlink(file).catch((e: unknown) => stranded?.(file, e));
    throw err;
  }
  await handle.close();
  return file;
}

/**
 * Links `temp` to `target`: true when the target now holds our bytes, false
 * when the name is taken by other bytes.
 *
 * The error link() returns is not trusted on its own, because network
 * filesystems lie about it: over NFS the server can make the link and the
 * reply be lost, so the retransmission answers EEXIST for our own success;
 * sshfs reports EEXIST as EPERM. So after an error we look at the target.
 * Its content decides, never its inode or link count (over sshfs the client
 * sees nlink=1 and an inode of its own for both names):
 * - our bytes there: our link landed, whatever the reply said;
 * - other bytes: another writer holds the name;
 * - nothing there: a real error, thrown as it came (unless it was EEXIST,
 *   where the name was taken and is already gone again: still not ours).
 *
 * A local kernel's EEXIST is the truth, and is taken as "taken" without a
 * look unless `eexistMayLie` (the corpus is on a shared filesystem): two
 * writers can build byte-identical files (the same bytes, deposited by the
 * same channel in the same millisecond), and only where EEXIST may lie is
 * that rare tie worth reading as ours.
 */
export interface LinkCare {
  /** The filesystem is shared (NFS, sshfs): EEXIST may be our own success, so the target is read. */
  eexistMayLie?: boolean;
  /**
   * Link in this turn of the event loop (`linkSync`), so that what the caller
   * does next with the name (note it where other processes read) follows
   * the link by microseconds, not by a thread-pool trip and the wait for this
   * process's next turn. Only on a local filesystem, where a link is one
   * short system call; a network mount could hold the whole process.
   */
  blocking?: boolean;
}

export async function linkExclusive(temp: string, target: string, care: LinkCare = {}): Promise<boolean> {
  try {
    if (care.blocking) linkSync(temp, target);
    else await fs.link(temp, target);
    return true;
  } catch (err) {
    const eexist = (err as NodeJS.ErrnoException).code === 'EEXIST';
    if (eexist && !care.eexistMayLie) return false;
    const there = await readIfThere(target);
    if (there === null) {
      if (eexist) return false;
      throw err;
    }
    let ours: Buffer;
    try {
      ours = await fs.readFile(temp);
    } catch (readErr) {
      // Cannot compare. A lost connection is the news (the caller may retry); otherwise say what link() said.
      throw lostConnectionCode(readErr, true) !== null ? readErr : err;
    }
    return ours.equals(there);
  }
}

/** The bytes at `file`, or null when nothing is there. Errors other than absence are thrown. */
async function readIfThere(file: string): Promise<Buffer | null> {
  try {
    return await readRecordFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    if (err instanceof NotARecordFile) return Buffer.alloc(0); // something else holds the name: taken
    throw err;
  }
}

/**
 * fsyncs one directory, sharing work between concurrent callers: an fsync
 * that starts after your link() covers it, so callers that arrive while one
 * is running all wait for the next one instead of each starting their own.
 */
export class DirectorySync {
  private readonly handle: ReplaceableHandle;
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(private readonly dir: string) {
    this.handle = new ReplaceableHandle(() => fs.open(this.dir, fsc.O_RDONLY | fsc.O_DIRECTORY));
  }

  sync(): Promise<void> {
    if (!this.running) return (this.running = this.run());
    if (!this.queued) {
      this.queued = this.running.catch(() => {}).then(() => {
        this.queued = null;
        return (this.running = this.run());
      });
    }
    return this.queued;
  }

  private async run(): Promise<void> {
    try {
      await (await this.handle.get()).sync();
    } catch (err) {
      this.handle.replace(); // the directory may have been replaced; reopen next time
      throw err;
    } finally {
      this.running = null;
    }
  }

  /** The path now names another directory (a restore): the next sync opens it afresh. */
  reopen(): void {
    this.handle.replace();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
