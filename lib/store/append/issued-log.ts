/**
 * The id high-water log, `.state/issued`: one id per line, appended by every
 * process that shares the corpus, each followed by what its writer parsed of
 * the record (model/issued-line.ts says why and how). Its highest line, together with the scan,
 * is the highest id ever issued, so a record file that vanishes never hands
 * its id to a new record, even after a restart.
 *
 * Small O_APPEND writes are atomic, so processes need no lock to share it.
 * It is not fsynced: after a power cut the record itself is durable and the
 * start-up scan finds its id; the log only matters for files that vanish later.
 *
 * A line is believed only when it is plausible, which is cheap to check:
 * ids are issued one past the highest, so a line more than MAX_LEAD past
 * every id believed before it (in the order the lines were written) is
 * believed only if its record, or one of the MAX_LEAD ids below it, is on
 * disk now (a few lstats, for such a line only: the open of a store noted
 * the highest record a git pull brought, and that one may be gone since,
 * not all of its neighbours). A log copied from
 * another store or scribbled on (`relay-9999` in a store of five records)
 * would otherwise end assignment for everyone (ids_exhausted); such a line
 * is ignored with a warning, and the high-water is what the rest says.
 */
import { closeSync, constants as fsc, fstatSync, lstatSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { errnoName } from '../../errors.js';
import { readStateFile } from '../../disk/state-file.js';
import type { IdShape } from '../../model/ids.js';
import { formatIssuedLine, issuedLineId, parseIssuedLine, type IssuedHint, type IssuedLine } from '../../model/issued-line.js';
import type { Logger } from '../../log.js';

/**
 * How far past the ids believed so far a line may go without its record on
 * disk: appends in flight at once in every process can be noted out of order.
 */
const MAX_LEAD = 64;

/**
 * How much of the log a start reads: its end, where the highest ids are. A
 * line is a few hundred bytes at most, so this is hundreds of thousands of
 * appends; a log past it (or /dev/zero behind a symlink) costs no more.
 */
export const MAX_ISSUED_READ = 64 * 1024 * 1024;

/** The log is a regular file we append to; anything else at its name (a FIFO, a symlink) is replaced by a new log. */
const NOT_A_LOG = new Set(['ELOOP', 'EMLINK', 'EFTYPE', 'ENXIO', 'ENOTREG']);

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
  /** Lines already warned about, so a log read again does not say it twice. */
  private readonly ignored = new Set<number>();

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
    const got = await readStateFile(this.file, { max: MAX_ISSUED_READ, tail: true });
    if (got.kind !== 'bytes') return this.highestNoted;
    let text = got.bytes.toString('latin1');
    // Read from its end: the first line may be cut, and is not a line.
    if (got.offset > 0) text = text.slice(text.indexOf('\n') + 1);
    const skipped = got.bytes.length - text.length;
    this.readInode = got.stat.ino;
    this.readTo = got.offset + skipped + text.lastIndexOf('\n') + 1;
    text = text.slice(0, text.lastIndexOf('\n') + 1);
    this.seen = true;
    // The ids alone: the whole log is read at every start, and its hints are for the lines read as they land.
    const idOnly = (written: string): IssuedLine | null => {
      const n = issuedLineId(written, this.shape);
      return n === null ? null : { n, hint: null };
    };
    for (const { n } of this.linesIn(text, idOnly)) if (n > this.highestNoted) this.highestNoted = n;
    return this.highestNoted;
  }

  /** The plausible lines among these, in order (see the top of this file); the rest are warned about once. */
  private linesIn(text: string, parse = (written: string) => parseIssuedLine(written, this.shape)): IssuedLine[] {
    const lines: IssuedLine[] = [];
    let top = this.highestNoted;
    for (const written of text.split('\n')) {
      const line = parse(written);
      if (line === null) continue;
      const { n } = line;
      if (n > top + MAX_LEAD && !this.heldNear(n)) {
        if (!this.ignored.has(n)) this.log.warn(`${this.file} says ${this.shape.format(n)} was issued, ${n - top} past every id before it, and neither it nor any of ` +
          `the ${MAX_LEAD} ids below it is here; ignoring that line (a log copied from another store, or edited). \`p-e-relay verify\` checks the records themselves.`);
        this.ignored.add(n);
        continue;
      }
      lines.push(line);
      if (n > top) top = n;
    }
    return lines;
  }

  /** Whether anything is named for this id, or for one of the MAX_LEAD below it, in the corpus (the log's directory's parent) now. */
  private heldNear(n: number): boolean {
    const corpus = path.dirname(path.dirname(this.file));
    for (let m = n; m >= Math.max(1, n - MAX_LEAD); m--) {
      try {
        lstatSync(path.join(corpus, this.shape.format(m)));
        return true;
      } catch {
        // not this one
      }
    }
    return false;
  }

  /**
   * The lines noted since the last read, by any process (none when nothing
   * was), each with its record's hint where the writer left one. Synchronous and cheap when nothing changed (one stat), so
   * a store can ask before every answer: this is how a process that was not
   * woken for a record (bells.ts) learns of it. A log that was replaced or
   * cut short is read again from its start.
   */
  readNew(): IssuedLine[] {
    let size: number;
    let inode: number;
    try {
      // lstat: a symlink or a FIFO at the log's name is no log (readStateFile), and is not opened here either.
      const stat = lstatSync(this.file);
      if (!stat.isFile()) return [];
      ({ size, ino: inode } = stat);
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
      this.readFd ??= openSync(this.file, fsc.O_RDONLY | fsc.O_NONBLOCK | fsc.O_NOFOLLOW);
      const buffer = Buffer.allocUnsafe(size - this.readTo);
      const got = readSync(this.readFd, buffer, 0, buffer.length, this.readTo);
      text = buffer.toString('latin1', 0, got);
    } catch {
      this.closeReader();
      return [];
    }
    const end = text.lastIndexOf('\n') + 1; // a line still being written is read next time
    this.readTo += end;
    const lines = this.linesIn(text.slice(0, end));
    for (const { n } of lines) if (n > this.highestNoted) this.highestNoted = n;
    return lines;
  }

  private closeReader(): void {
    if (this.readFd === null) return;
    try {
      closeSync(this.readFd);
    } catch {}
    this.readFd = null;
  }

  /**
   * Adds an id, with what its writer parsed of the record (`hint`). A failure
   * is logged, never thrown: the caller has already published the record,
   * and refusing now would make its client retry and deposit the same bytes
   * twice.
   *
   * Synchronous, in the same turn as the link() it follows: until the line
   * is there, another process that finds the record reads its file to learn
   * whom it is for, and three trips through the thread pool on a busy
   * machine left that window open for milliseconds. The file is opened for
   * each note rather than held open, so a log removed under us (`.state/`
   * deleted, `git clean -x`, another host's operator) is noticed by the open
   * failing with ENOENT, on every filesystem: a held handle's link count
   * says 0 on a local disk but not over sshfs or NFS, where writes to it
   * would go on landing in a file nobody can read again. A new log starts
   * with the highest id carried over. ESTALE (NFS: the file was replaced on
   * the server) is answered by opening again.
   */
  note(n: number, hint?: IssuedHint): void {
    const line = formatIssuedLine(this.shape, n, hint);
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          appendTo(this.file, line, false);
          this.seen = true;
          break;
        } catch (err) {
          const code = errnoName(err) ?? ''; // names ESTALE, which Node leaves as "Unknown system error -116"
          if (NOT_A_LOG.has(code) && attempt === 0) {
            this.log.warn(`${this.file} was not a regular file; replaced it with a new log from ${this.shape.format(Math.max(n, this.highestNoted))}`);
            unlinkSync(this.file);
          }
          if (code === 'ENOENT' || (NOT_A_LOG.has(code) && attempt === 0)) {
            const carried = this.highestNoted > n ? `${this.shape.format(this.highestNoted)}\n` : '';
            appendTo(this.file, carried + line, true);
            const from = this.shape.format(Math.max(n, this.highestNoted));
            if (attempt === 0 && code === 'ENOENT') {
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
function appendTo(file: string, text: string, create: boolean): void {
  // Never through a symlink, never blocked on a FIFO (ENXIO when nobody reads it).
  const fd = openSync(file, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_NONBLOCK | fsc.O_NOFOLLOW | (create ? fsc.O_CREAT : 0), 0o644);
  try {
    if (!fstatSync(fd).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'ENOTREG' });
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
