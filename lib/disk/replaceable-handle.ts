/**
 * A file handle opened on first use that can be swapped for a fresh one when
 * its path starts to name another file (a corpus directory restored, a log
 * removed under us). A call may still be using the old handle, so it is not
 * closed on the spot: retired handles close together with this one.
 */
import type { FileHandle } from 'node:fs/promises';

export class ReplaceableHandle {
  private current: Promise<FileHandle> | null = null;
  private readonly retired: Promise<FileHandle>[] = [];
  private closed = false;

  constructor(private readonly open: () => Promise<FileHandle>) {}

  /** The current handle, opening it if there is none; once closed, never opens again. */
  get(): Promise<FileHandle> {
    if (this.closed) return Promise.reject(new Error('the handle was closed'));
    return (this.current ??= this.open());
  }

  /** Sets the current handle aside; the next get() opens the path again. */
  replace(): void {
    if (this.current) this.retired.push(this.current);
    this.current = null;
  }

  async close(): Promise<void> {
    this.closed = true;
    const handles = [...this.retired.splice(0), ...(this.current ? [this.current] : [])];
    this.current = null;
    for (const handle of handles) await (await handle.catch(() => null))?.close().catch(() => {});
  }
}
