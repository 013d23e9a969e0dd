/**
 * A test's cleanups as one stack, run last first (as Go's t.Cleanup), every
 * step run even when one before it fails.
 *
 * node:test runs a test's after hooks in the order they were added and stops
 * at the first that throws. Registered one hook per fixture, a temp directory
 * made first was removed first, under the servers still using it; and when
 * that removal failed (a server finishing a rename into `.state/`), the later
 * hooks that would stop those servers never ran, so their children kept the
 * test file alive until CI's own timeout. Here what was made last stops first,
 * and a failing step cannot keep the others from running.
 */

/** A test context, or a suite's collector of cleanups: anything with after(). */
export interface Cleanup {
  after(fn: () => unknown): void;
}

const stacks = new WeakMap<Cleanup, (() => unknown)[]>();

/** Runs `step` when the test ends, before every cleanup registered earlier through here. */
export function cleanup(t: Cleanup, step: () => unknown): void {
  let stack = stacks.get(t);
  if (stack === undefined) {
    const steps: (() => unknown)[] = [];
    stacks.set(t, steps);
    t.after(() => unwind(steps));
    stack = steps;
  }
  stack.push(step);
}

async function unwind(steps: (() => unknown)[]): Promise<void> {
  const failures: unknown[] = [];
  for (let step = steps.pop(); step !== undefined; step = steps.pop()) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} cleanups failed`);
}

/**
 * Cleanups for a fixture a whole file (or suite) shares, run last first when
 * `run` is called: hand `run` to node:test's after() where it is made.
 */
export function sharedCleanup(): Cleanup & { run(): Promise<void> } {
  const steps: (() => unknown)[] = [];
  const shared: Cleanup = { after: (fn) => void steps.push(fn) };
  return { after: shared.after, run: () => unwind(steps) };
}
