/**
 * How to name this CLI in a command we suggest: the way it was run. The
 * package is not published, so `npx p-e-relay` answers 404 outside the
 * checkout; a checkout's user ran `./bin/p-e-relay`, an `npm link` user
 * `p-e-relay`, and anyone else a path we can print back.
 */
import path from 'node:path';

export function invokedAs(script = process.argv[1], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  if (script === undefined) return 'p-e-relay';
  const file = path.resolve(cwd, script);
  const onPath = (env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && path.resolve(cwd, dir) === path.dirname(file));
  if (onPath) return path.basename(file);
  const relative = path.relative(cwd, file);
  const shown = relative.startsWith('..') || path.isAbsolute(relative) ? file : `./${relative}`;
  return /^[\w./+-]+$/.test(shown) ? shown : `'${shown.replaceAll("'", `'\\''`)}'`;
}
