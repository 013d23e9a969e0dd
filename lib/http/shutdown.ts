/**
 * How `serve --http` stops once asked to: its closing steps in order, bounded.
 * An orderly shutdown needs no more than the steps themselves (the hub stops
 * accepting, ends waits and streams and cuts connections that have not
 * finished after a short grace; the store closes), after which nothing holds
 * the process and it exits by itself. Two things bound it when something
 * does not let go (a library's watcher left behind, a filesystem that stalls
 * a close): a deadline from the request to stop, and a second SIGINT or
 * SIGTERM. Either exits at once with status 1, saying on stderr which steps
 * had not finished and what the process still held open, so a hub never
 * outlives its signal by more than the deadline and the operator learns what
 * it cut short.
 */

/** How long a shutdown may take, from the request to stop to the exit. */
export const SHUTDOWN_DEADLINE_MS = 5_000;

export interface ShutdownStep {
  /** What the step closes, as the cut-short line names it: "the store". */
  name: string;
  run(): Promise<void>;
}

export interface Shutdown {
  /** Why to stop: the first SIGINT or SIGTERM, or what stop() was told. */
  readonly requested: Promise<string>;
  /** Asks to stop for another reason (the parent process is gone); the deadline starts now. */
  stop(why: string): void;
  /** Runs the steps in order; the deadline and the second signal stay armed until the process exits. */
  run(steps: ShutdownStep[]): Promise<void>;
}

/** Listens for SIGINT and SIGTERM from now on, for the rest of the process's life. */
export function armShutdown(options: { say(line: string): void; deadlineMs?: number }): Shutdown {
  const { say } = options;
  const deadlineMs = options.deadlineMs ?? SHUTDOWN_DEADLINE_MS;
  const unfinished = new Set<string>();
  let asked = false;
  let resolve!: (why: string) => void;
  const requested = new Promise<string>((r) => (resolve = r));
  const cut = (why: string): never => {
    const open = stillOpen();
    say(`${why}; exiting now${unfinished.size > 0 ? `, before ${[...unfinished].join(' and ')} had closed` : ''}${open ? ` (still open: ${open})` : ''}`);
    process.exit(1);
  };
  const stop = (why: string) => {
    if (asked) return;
    asked = true;
    resolve(why);
    // Unref'd: when the steps leave nothing open the process exits before it fires.
    setTimeout(() => cut(`the shutdown took longer than ${deadlineMs} ms`), deadlineMs).unref();
  };
  // One listener kept for good, not one `once` after another: in between,
  // a signal would find none and kill the process with nothing closed.
  const onSignal = (signal: NodeJS.Signals) => (asked ? cut(`${signal} again`) : stop(signal));
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    requested,
    stop,
    async run(steps) {
      for (const step of steps) {
        unfinished.add(step.name);
        await step.run().catch((err: unknown) => say(`${step.name} did not close cleanly: ${(err as Error).message}`));
        unfinished.delete(step.name);
      }
    },
  };
}

/** What keeps the event loop alive, counted by kind ("FSEventWrap ×1, PipeWrap ×1"); the stderr pipe is among them. */
function stillOpen(): string {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return [...counts].map(([kind, n]) => `${kind} ×${n}`).join(', ');
}
