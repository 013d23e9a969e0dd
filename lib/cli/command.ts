/**
 * The shape every CLI command has, and the options they share. Commands are
 * thin: they parse their words, call the same store functions the MCP tools
 * and REST routes call, and print the same text.
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { createLogger, levelFromEnv, type Logger } from '../log.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
}

export interface CommandContext extends CliIo {
  corpus: string;
  keys: string;
  log: Logger;
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/** A command's code; its name and summary live in the command table (commands.ts). */
export interface Command {
  /** Usage lines and option descriptions, printed by --help. */
  help: string;
  options?: OptionSpec;
  /** The "Common options" its --help ends with, where it takes fewer than COMMON_HELP lists (the bridge holds no corpus). */
  commonHelp?: string;
  /** Most commands take the corpus; `sign` and friends take only keys. */
  allowPositionals?: boolean;
  run(ctx: CommandContext): Promise<number>;
}

/** Exit codes: 0 ok, 1 refused or failed (the sentence says why), 2 bad usage, 3 `wait` ran out of time with nothing. */
export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;
/** Its own code, so a script tells "nothing came yet" (call again) from a refusal (fix something). */
export const EXIT_TIMED_OUT = 3;

export class UsageError extends Error {}

export const COMMON_OPTIONS: OptionSpec = {
  corpus: { type: 'string' },
  keys: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

export const COMMON_HELP = `Common options:
  --corpus DIR   the corpus directory (env P_E_RELAY_CORPUS, default ./corpus):
                 a store, or an empty directory (made one); others are refused
  --keys DIR     the keys directory (env P_E_RELAY_KEYS, default: keys beside
                 the corpus, so ./keys with the default ./corpus)
  -h, --help     this help`;

export function parseCommand(name: string, command: Command, argv: string[], io: CliIo): CommandContext {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...COMMON_OPTIONS, ...command.options }, allowPositionals: command.allowPositionals ?? false, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message.replace(/\. To specify.*$/s, '')}. See \`p-e-relay ${name} --help\`.`);
  }
  const { values, positionals } = parsed;
  // An empty variable counts as unset: '' would resolve to the working
  // directory, and records would be deposited wherever the command ran.
  const corpus = (values.corpus as string | undefined) ?? (io.env.P_E_RELAY_CORPUS || './corpus');
  return {
    ...io,
    corpus,
    // Beside the corpus, as `init` lays them out: `init --corpus /srv/relay/corpus` and a later
    // `serve --http --corpus /srv/relay/corpus` then agree on /srv/relay/keys wherever each is run.
    keys: (values.keys as string | undefined) ?? (io.env.P_E_RELAY_KEYS || path.join(path.dirname(corpus), 'keys')),
    log: createLogger(levelFromEnv(io.env)),
    values,
    positionals,
  };
}

/** The local user, for deposited-by cli/<user>; reduced to characters safe in a header line. */
export function localUser(env: NodeJS.ProcessEnv = process.env): string {
  let name = env.USER ?? env.LOGNAME ?? '';
  if (!name) {
    try {
      name = os.userInfo().username;
    } catch {
      name = 'unknown';
    }
  }
  return name.replace(/[^A-Za-z0-9._-]/g, '_') || 'unknown';
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

export function writeLine(stream: NodeJS.WritableStream, text: string): void {
  stream.write(text.endsWith('\n') ? text : text + '\n');
}

/**
 * Writes, and when the stream's buffer is full returns a promise that
 * settles once it drains (or closes): a command printing many lines goes at
 * the pace of its reader instead of buffering them all.
 */
export function writeWhenReady(stream: NodeJS.WritableStream, text: string): Promise<void> | void {
  if (stream.write(text)) return;
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}

export function stringOption(ctx: CommandContext, name: string): string | undefined {
  const v = ctx.values[name];
  return typeof v === 'string' ? v : undefined;
}

/** A whole number from an option, or a UsageError naming the option. */
export function numberOption(ctx: CommandContext, name: string): number | undefined {
  const v = stringOption(ctx, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} takes a whole number, not "${v}".`);
  return Number(v);
}
