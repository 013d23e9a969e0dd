/** The worker side of the bench's IPC: announce readiness, wait for orders, report. */
export function send(message: Record<string, unknown>): void {
  // The bench may be gone (stopped with ^C): then there is nobody to tell, and nothing left to do.
  if (!process.connected) process.exit(0);
  process.send?.(message, undefined, undefined, () => {});
}

/** Calls `handler` for every message of `type` from the bench; the worker exits when the bench goes away. */
export function on(type: string, handler: (message: Record<string, any>) => void | Promise<void>): void {
  process.on('message', (m: Record<string, any>) => {
    if (m?.type === type) void Promise.resolve(handler(m)).catch((err) => {
      process.stderr.write(`bench worker: ${(err as Error).stack}\n`);
      process.exit(1);
    });
  });
}

process.on('disconnect', () => process.exit(0));
