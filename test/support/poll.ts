/**
 * The test kit's one poller, for conditions nothing announces (a gauge on
 * /metrics, a file another process writes, a state the store passes
 * through). Where an event exists (a notification, a stream's data, a
 * child's exit or output), await the event instead.
 */

export interface PollOptions {
  /** How long before the test fails. */
  timeoutMs?: number;
  /** Milliseconds between looks; 0 looks again on the next turn of the event loop (to catch a passing state). */
  everyMs?: number;
}

/** Resolves once `check` holds; fails after the timeout, naming `what` was awaited. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, { timeoutMs = 10_000, everyMs = 10 }: PollOptions = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => (everyMs === 0 ? setImmediate(resolve) : setTimeout(resolve, everyMs)));
  }
}

/**
 * Resolves once a child's output matches `pattern`, looking again each time
 * the stream emits data: output announces itself, so there is nothing to
 * poll. `text` is what the caller's own listener has collected so far (it
 * was added first, so it has the new chunk when this one looks).
 */
export function said(stream: NodeJS.ReadableStream, text: () => string, pattern: RegExp, what: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const look = () => {
      if (!pattern.test(text())) return;
      done();
      resolve();
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the output so far:\n${text()}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      stream.off('data', look);
    };
    stream.on('data', look);
    look();
  });
}
