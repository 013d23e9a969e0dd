/**
 * Running rsync for `mirror`: the flags that make a copy safe for an
 * append-only corpus, and reading back what rsync says it did.
 *
 * rsync is the tool here because it already does the hard parts: it moves
 * only what is missing, over ssh or locally, and it publishes each file by
 * writing `.NAME.XXXXXX` and renaming it into place, so a reader never sees
 * half a record. What it does not know is that records are immutable; the
 * flags below tell it.
 */
import { spawn } from 'node:child_process';
import { RelayError } from '../errors.js';

/**
 * The rsync command line for filling DEST from SRC. Pure, so tests and docs
 * can show exactly what runs.
 */
export function rsyncArgs(source: string, dest: string, options: { rsh?: string } = {}): string[] {
  return [
    // Recursive, keeping modes and times; bytes are copied as they are (rsync
    // never converts line endings or encodings).
    '-a',
    // Never replace a file the mirror already has: a record, once here, is
    // final, even if the source's copy later differs (damage, a hand edit).
    '--ignore-existing',
    // Records are regular files. A symlink in the source would make the mirror
    // serve a file from outside its corpus, so links are skipped.
    '--no-links',
    // Nor FIFOs, sockets or device files (-a would copy them): a FIFO named
    // like a record or like the settings file would block whoever opens it.
    '--no-specials',
    '--no-devices',
    // The primary's working state (temp files, high-water log, replay guard)
    // belongs to the primary's machine.
    '--exclude=/.state/',
    // A corpus kept as its own git repository: a mirror is a corpus, not a
    // clone, and git's refs and index change in place, which this copy never does.
    '--exclude=/.git/',
    // rsync's own in-flight temp names, when the source is itself a mirror
    // being filled at this moment.
    '--exclude=/.relay-*',
    // One line per item, so we can report what arrived: `%i` is the
    // itemized change (`>f+++++++++` for a new file), `%n` the name.
    '--out-format=%i %n',
    ...(options.rsh ? ['--rsh', options.rsh] : []),
    contentsOf(source),
    contentsOf(dest),
  ];
}

/** rsync copies a directory's contents only when the path ends in a slash. */
export function contentsOf(location: string): string {
  if (location.endsWith('/')) return location;
  // `host:` alone means the remote home directory; `host:/` would be its root.
  if (isRemote(location) && location.endsWith(':')) return `${location}./`;
  return `${location}/`;
}

/**
 * rsync's own rule: a colon before the first slash makes `host:path` (or
 * `host::module`) remote, as does an rsync:// URL. Write `./a:b` for a local
 * directory whose name holds a colon.
 */
export function isRemote(location: string): boolean {
  if (location.startsWith('rsync://')) return true;
  const colon = location.indexOf(':');
  const slash = location.indexOf('/');
  return colon > 0 && (slash === -1 || colon < slash);
}

export interface ItemizedLine {
  /** `f` file, `d` directory, `L` symlink, `D`/`S` device or special. */
  type: string;
  /** True when the item did not exist at the destination before. */
  created: boolean;
  name: string;
}

/** Parses one `%i %n` line; rsync's other messages (warnings, "skipping …") give null. */
export function parseItemized(line: string): ItemizedLine | null {
  const m = /^([<>ch.*])([fdLDS])(\S{9}) (.+)$/.exec(line);
  if (!m) return null;
  return { type: m[2]!, created: m[3]!.startsWith('+'), name: m[4]! };
}

export interface RsyncRun {
  exitCode: number;
  /** The last lines rsync wrote to stderr, for the refusal sentence. */
  stderrTail: string[];
}

/** What rsync's exit codes mean, in words an operator can act on (from rsync(1)). */
const EXIT_MEANING: Record<number, string> = {
  1: 'a syntax or usage error',
  3: 'it could not select the files to copy',
  5: 'it could not start talking to the remote rsync',
  10: 'a network (socket) error',
  11: 'an error reading or writing a file',
  12: 'the connection to the remote rsync broke',
  20: 'it was interrupted',
  23: 'some files could not be copied (a missing source directory, or permissions)',
  30: 'a timeout',
  255: 'ssh could not connect or log in',
};

/** rsync 24: files vanished at the source while it ran; everything else arrived. */
export const RSYNC_VANISHED = 24;

/**
 * Runs rsync, calling `onLine` for each line it writes to stdout and passing
 * its stderr through. Resolves with the exit code; refuses with
 * `rsync_missing` when there is no rsync to run.
 */
export function runRsync(args: string[], io: { onLine(line: string): void; stderr: NodeJS.WritableStream; env?: NodeJS.ProcessEnv }): Promise<RsyncRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('rsync', args, { env: io.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const stderrTail: string[] = [];
    let pending = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) io.onLine(line);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      io.stderr.write(chunk);
      stderrTail.push(...chunk.split('\n').filter((l) => l.trim()));
      stderrTail.splice(0, Math.max(0, stderrTail.length - 3));
    });
    child.on('error', (err) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new RelayError('rsync_missing', '`mirror` runs rsync, and rsync is not installed here (or not on ' +
          'PATH). Install it (Debian/Ubuntu: `apt-get install rsync`; Fedora: `dnf install rsync`; ' +
          'macOS: `brew install rsync`), on this machine and on the source host, then run mirror again.'));
      } else reject(err);
    });
    child.on('close', (code, signal) => {
      if (pending) io.onLine(pending);
      resolve({ exitCode: code ?? (signal ? 128 + 15 : 1), stderrTail });
    });
  });
}

/** The refusal for a failed run; what arrived before the failure is whole and stays. */
export function rsyncFailure(run: RsyncRun, source: string, arrived: string[]): RelayError {
  const meaning = EXIT_MEANING[run.exitCode] ?? 'an error';
  const said = run.stderrTail.length ? ` rsync said: ${run.stderrTail.join(' / ')}.` : '';
  const kept = arrived.length ? ` The ${arrived.length} record(s) that arrived before it stopped are whole and stay.` : '';
  return new RelayError(
    'rsync_failed',
    `rsync could not finish copying from ${source}: exit code ${run.exitCode}, ${meaning}.${said}${kept} Fix the cause and run mirror again; it fetches only what is still missing.`,
    { exitCode: run.exitCode, arrived },
  );
}
