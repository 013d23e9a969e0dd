/**
 * p-e-relay: parse the command word and dispatch. Each command lives in
 * lib/cli/ and is loaded only when asked for, so `serve` over stdio starts
 * without loading the HTTP hub.
 */
import { isRelayError } from '../lib/errors.js';
import { VERSION } from '../lib/version.js';
import { COMMON_HELP, EXIT_REFUSED, EXIT_USAGE, UsageError, parseCommand, type CliIo, type Command } from '../lib/cli/command.js';

type Loader = () => Promise<Command>;

const COMMANDS: Record<string, { summary: string; load: Loader }> = {
  init: { summary: 'create an empty store (corpus and keys directories)', load: async () => (await import('../lib/cli/ops-commands.js')).initCommand },
  serve: { summary: 'run the MCP server (stdio by default, or the HTTP hub with --http)', load: async () => (await import('../lib/cli/serve-command.js')).serveCommand },
  append: { summary: 'deposit a record from FILE or stdin; prints the id', load: async () => (await import('../lib/cli/store-commands.js')).appendCommand },
  get: { summary: 'print a record\'s exact bytes', load: async () => (await import('../lib/cli/store-commands.js')).getCommand },
  exists: { summary: 'print PRESENT, KNOWN_MISSING or UNKNOWN for an id', load: async () => (await import('../lib/cli/store-commands.js')).existsCommand },
  ls: { summary: 'list held and known-missing ids', load: async () => (await import('../lib/cli/store-commands.js')).lsCommand },
  replies: { summary: 'list records naming an id in parent:/ref:', load: async () => (await import('../lib/cli/store-commands.js')).repliesCommand },
  wait: { summary: 'block until a new record lands', load: async () => (await import('../lib/cli/store-commands.js')).waitCommand },
  tail: { summary: 'print the newest records; -f follows', load: async () => (await import('../lib/cli/ops-commands.js')).tailCommand },
  verify: { summary: 're-check every digest; report damaged records', load: async () => (await import('../lib/cli/ops-commands.js')).verifyCommand },
  mirror: { summary: 'fill this corpus from SRC with rsync (a read-only mirror)', load: async () => (await import('../lib/cli/mirror-command.js')).mirrorCommand },
  keys: { summary: 'manage the HMAC keys agents sign with (add, list, revoke)', load: async () => (await import('../lib/cli/key-commands.js')).keysCommand },
  sign: { summary: 'print an Authorization header for a request body (for curl)', load: async () => (await import('../lib/cli/key-commands.js')).signCommand },
  bridge: { summary: 'a stdio MCP server that forwards to an HTTP hub, signing what must be signed', load: async () => (await import('../lib/cli/bridge-command.js')).bridgeCommand },
};

function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `p-e-relay ${VERSION}: an append-only hub where agents leave each other messages.

Usage: p-e-relay COMMAND [options]

Commands:
${lines.join('\n')}

${COMMON_HELP}

Run \`p-e-relay COMMAND --help\` for a command's own options.
Exit codes: 0 ok, 1 refused or failed (the message says why), 2 bad usage.
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
  const entry = COMMANDS[word];
  if (!entry) {
    io.stderr.write(`p-e-relay: there is no command "${word}". Run \`p-e-relay --help\` for the list.\n`);
    return EXIT_USAGE;
  }
  const command = await entry.load();
  try {
    const ctx = parseCommand(command, rest, io);
    if (ctx.values.help) {
      io.stdout.write(`${command.help}\n\n${COMMON_HELP}\n`);
      return 0;
    }
    return await command.run(ctx);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`p-e-relay ${word}: ${err.message}\n`);
      return EXIT_USAGE;
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
