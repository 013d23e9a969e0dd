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
import fs from 'node:fs/promises';
import type { IdShape } from '../model/ids.js';
import type { Logger } from '../log.js';
import { ReplaceableHandle } from './replaceable-handle.js';

export class IssuedLog {
  private readonly handle: ReplaceableHandle;
  /** The highest id in the log, as far as this process knows. */
  private highestNoted = 0;

  constructor(
    private readonly file: string,
    private readonly shape: IdShape,
    private readonly log: Logger,
  ) {
    this.handle = new ReplaceableHandle(() => fs.open(this.file, 'a'));
  }

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
   */
  async note(n: number): Promise<void> {
    try {
      // The log was removed under us (`.state/` deleted, `git clean -x`): a
      // write would go to a file nobody can read again. Start a new one, and
      // carry the highest id over.
      if ((await (await this.handle.get()).stat()).nlink === 0) {
        this.handle.replace();
        if (this.highestNoted > n) await (await this.handle.get()).write(`${this.shape.format(this.highestNoted)}\n`);
      }
      await (await this.handle.get()).write(`${this.shape.format(n)}\n`);
      if (n > this.highestNoted) this.highestNoted = n;
    } catch (err) {
      this.handle.replace();
      this.log.warn(`could not note ${this.shape.format(n)} in ${this.file} (${(err as Error).message}); the record itself is stored`);
    }
  }

  /** The corpus directory was replaced: later notes go to the new directory's log. */
  reopen(): void {
    this.handle.replace();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}
