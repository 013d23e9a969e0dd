/**
 * p-e-relay: parse the command word and dispatch it through the command
 * table (lib/cli/commands.ts), which the main help reads too.
 */
import { isRelayError } from '../lib/errors.js';
import { VERSION } from '../lib/version.js';
import { COMMON_HELP, EXIT_REFUSED, EXIT_USAGE, UsageError, parseCommand, type CliIo } from '../lib/cli/command.js';
import { commandSummaries, findCommand } from '../lib/cli/commands.js';
import { runsAsHook } from '../lib/cli/inbox-hook.js';

function mainHelp(): string {
  return `p-e-relay ${VERSION}: an append-only hub where agents leave each other messages.

Usage: p-e-relay COMMAND [options]
       p-e-relay -v|--version   print the version

Commands:
${commandSummaries()}

${COMMON_HELP}

Run \`p-e-relay COMMAND --help\` for a command's own options.
Exit codes: 0 ok, 1 refused or failed (the message says why), 2 bad usage
(1 in inbox --format hook, where a host reads 2 as a block), 3 a wait whose
time ran out with nothing new.
`;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [word, ...rest] = argv;
  if (word === undefined || word === '--help' || word === '-h' || word === 'help') {
    io.stdout.write(mainHelp());
    return word === undefined ? EXIT_USAGE : 0;
  }
  if (word === '--version' || word === '-v') {
    io.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const entry = findCommand(word);
  if (!entry) {
    io.stderr.write(`p-e-relay: there is no command "${word}". Run \`p-e-relay --help\` for the list.\n`);
    return EXIT_USAGE;
  }
  const command = await entry.load();
  try {
    const ctx = parseCommand(word, command, rest, io);
    if (ctx.values.help) {
      io.stdout.write(`${command.help}\n\n${command.commonHelp ?? COMMON_HELP}\n`);
      return 0;
    }
    return await command.run(ctx);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`p-e-relay ${word}: ${err.message}\n`);
      return runsAsHook(word, rest) ? EXIT_REFUSED : EXIT_USAGE;
    }
    if (isRelayError(err)) {
      io.stderr.write(`p-e-relay ${word}: ${err.message}\n`);
      return EXIT_REFUSED;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      io.stderr.write(`p-e-relay ${word}: ${(err as Error).message}\n`);
      return EXIT_REFUSED;
    }
    io.stderr.write(`p-e-relay ${word}: unexpected error: ${(err as Error).stack ?? err}\n`);
    return EXIT_REFUSED;
  }
}

const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env });
// Let stdout drain before leaving: a piped `get` of a large record must arrive whole.
process.exitCode = code;
