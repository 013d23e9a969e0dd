/**
 * The id high-water log, `.state/issued`: one id per line, appended by every
 * process that shares the corpus. Its highest line, together with the scan,
 * is the highest id ever issued, so a record file that vanishes never hands
 * its id to a new record, even after a restart.
 *
 * Small O_APPEND writes are atomic, so processes need no lock to share it.
 * It is not fsynced: after a power cut the record itself is durable and the
 * start-up scan finds its id; the log only matters for files that vanish later.
 */
import { closeSync, constants as fsc, openSync, readSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import type { IdShape } from '../model/ids.js';
import type { Logger } from '../log.js';

export class IssuedLog {
  /** The highest id in the log, as far as this process knows. */
  private highestNoted = 0;
  /** How far this process has read the log (bytes, up to a line's end), and which file that was. */
  private readTo = 0;
  private readInode = -1;
  /** Held open for readNew (a pread a look, not open + read + close), on the file readInode names. */
  private readFd: number | null = null;
  /** This process has seen the log exist: only then is finding it missing news (a new store, a fresh clone have none yet). */
  private seen = false;

  constructor(
    private readonly file: string,
    private readonly shape: IdShape,
    private readonly log: Logger,
  ) {}

  get highest(): number {
    return this.highestNoted;
  }

  /** Reads the log; a missing or unreadable one counts as empty. */
  async read(): Promise<number> {
    let text = '';
    try {
      const inode = (await fs.stat(this.file)).ino;
      text = await fs.readFile(this.file, 'latin1');
      this.readInode = inode;
      this.readTo = text.lastIndexOf('\n') + 1;
      this.seen = true;
    } catch {
      return this.highestNoted;
    }
    this.highestNoted = Math.max(this.highestNoted, this.highestIn(text.slice(0, this.readTo)));
    return this.highestNoted;
  }

  /**
   * The ids noted since the last read, by any process (none when nothing
   * was). Synchronous and cheap when nothing changed (one stat), so
   * a store can ask before every answer: this is how a process that was not
   * woken for a record (bells.ts) learns of it. A log that was replaced or
   * cut short is read again from its start.
   */
  readNew(): number[] {
    let size: number;
    let inode: number;
    try {
      ({ size, ino: inode } = statSync(this.file));
    } catch {
      return [];
    }
    if (inode !== this.readInode || size < this.readTo) {
      this.closeReader();
      this.readInode = inode;
      this.readTo = 0;
    }
    if (size === this.readTo) return [];
    let text: string;
    try {
      this.readFd ??= openSync(this.file, 'r');
      const buffer = Buffer.allocUnsafe(size - this.readTo);
      const got = readSync(this.readFd, buffer, 0, buffer.length, this.readTo);
      text = buffer.toString('latin1', 0, got);
    } catch {
      this.closeReader();
      return [];
    }
    const end = text.lastIndexOf('\n') + 1; // a line still being written is read next time
    this.readTo += end;
    const ids: number[] = [];
    for (const line of text.slice(0, end).split('\n')) {
      const n = this.shape.parseRecordId(line);
      if (n === null) continue;
      ids.push(n);
      if (n > this.highestNoted) this.highestNoted = n;
    }
    return ids;
  }

  private closeReader(): void {
    if (this.readFd === null) return;
    try {
      closeSync(this.readFd);
    } catch {}
    this.readFd = null;
  }

  private highestIn(text: string): number {
    let highest = 0;
    for (const line of text.split('\n')) {
      const n = this.shape.parseRecordId(line);
      if (n !== null && n > highest) highest = n;
    }
    return highest;
  }

  /**
   * Adds an id. A failure is logged, never thrown: the caller has already
   * published the record, and refusing now would make its client retry and
   * deposit the same bytes twice.
   *
   * The file is opened for each note rather than held open, so a log removed
   * under us (`.state/` deleted, `git clean -x`, another host's operator) is
   * noticed by the open failing with ENOENT, on every filesystem: a held
   * handle's link count says 0 on a local disk but not over sshfs or NFS,
   * where writes to it would go on landing in a file nobody can read again.
   * A new log starts with the highest id carried over. ESTALE (NFS: the
   * file was replaced on the server) is answered by opening again.
   */
  async note(n: number): Promise<void> {
    const line = `${this.shape.format(n)}\n`;
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          await appendTo(this.file, line, false);
          this.seen = true;
          break;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') {
            const carried = this.highestNoted > n ? `${this.shape.format(this.highestNoted)}\n` : '';
            await appendTo(this.file, carried + line, true);
            const from = this.shape.format(Math.max(n, this.highestNoted));
            if (attempt === 0) {
              if (this.seen) this.log.info(`${this.file} was missing; started it again from ${from}`);
              else this.log.debug(`started the id log ${this.file} at ${from}`);
            }
            this.seen = true;
            break;
          }
          if (code !== 'ESTALE' || attempt > 0) throw err;
        }
      }
      if (n > this.highestNoted) this.highestNoted = n;
    } catch (err) {
      this.log.warn(`could not note ${this.shape.format(n)} in ${this.file} (${(err as Error).message}); the record itself is stored`);
    }
  }

  /** The corpus directory was replaced: the next note opens the new directory's log, and the next look reads it from its start. */
  reopen(): void {
    this.closeReader();
    this.readInode = -1;
  }

  async close(): Promise<void> {
    this.closeReader();
  }
}

/** One O_APPEND write (atomic for a line this small); `create` makes the file when it is missing. */
async function appendTo(file: string, text: string, create: boolean): Promise<void> {
  const handle = await fs.open(file, fsc.O_WRONLY | fsc.O_APPEND | (create ? fsc.O_CREAT : 0), 0o644);
  try {
    await handle.write(text);
  } finally {
    await handle.close();
  }
}
