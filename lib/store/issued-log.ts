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
import { constants as fsc } from 'node:fs';
import fs from 'node:fs/promises';
import type { IdShape } from '../model/ids.js';
import type { Logger } from '../log.js';

export class IssuedLog {
  /** The highest id in the log, as far as this process knows. */
  private highestNoted = 0;

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
      text = await fs.readFile(this.file, 'utf8');
    } catch {
      return this.highestNoted;
    }
    for (const line of text.split('\n')) {
      const n = this.shape.parseRecordId(line);
      if (n !== null && n > this.highestNoted) this.highestNoted = n;
    }
    return this.highestNoted;
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
          break;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') {
            const carried = this.highestNoted > n ? `${this.shape.format(this.highestNoted)}\n` : '';
            await appendTo(this.file, carried + line, true);
            if (attempt === 0) this.log.info(`${this.file} was missing; started it again from ${this.shape.format(Math.max(n, this.highestNoted))}`);
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

  /** The corpus directory was replaced: nothing is held open, so the next note opens the new directory's log. */
  reopen(): void {}

  async close(): Promise<void> {}
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
