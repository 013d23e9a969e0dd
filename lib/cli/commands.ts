/**
 * The command table: every CLI command's name, its one-line summary for
 * `p-e-relay --help`, and where its code lives. Dispatch and the main help
 * both read this table and nothing else, so a command is added with one file
 * (or one export) in lib/cli/ and one line here.
 *
 * Commands are loaded only when asked for, so `serve` over stdio starts
 * without loading the HTTP hub (esbuild splits each import into a chunk).
 */
import type { Command } from './command.js';

export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

export const COMMANDS: readonly CommandEntry[] = [
  { name: 'init', summary: 'create an empty store (corpus and keys directories)', load: async () => (await import('./ops-commands.js')).initCommand },
  { name: 'serve', summary: 'run the MCP server (stdio by default, or the HTTP hub with --http)', load: async () => (await import('./serve-command.js')).serveCommand },
  { name: 'append', summary: 'deposit a record from FILE or stdin; prints the id', load: async () => (await import('./store-commands.js')).appendCommand },
  { name: 'get', summary: "print a record's exact bytes", load: async () => (await import('./store-commands.js')).getCommand },
  { name: 'exists', summary: 'print PRESENT, KNOWN_MISSING or UNKNOWN for an id', load: async () => (await import('./store-commands.js')).existsCommand },
  { name: 'ls', summary: 'list held and known-missing ids', load: async () => (await import('./store-commands.js')).lsCommand },
  { name: 'replies', summary: 'list records naming an id in parent:/ref:', load: async () => (await import('./store-commands.js')).repliesCommand },
  { name: 'wait', summary: 'block until a new record lands', load: async () => (await import('./store-commands.js')).waitCommand },
  { name: 'inbox', summary: 'print what is addressed to an agent since its mark, for its host\'s hooks', load: async () => (await import('./inbox-command.js')).inboxCommand },
  { name: 'agents', summary: 'print the roster: who is here, last seen, waiting, what each does', load: async () => (await import('./agents-command.js')).agentsCommand },
  { name: 'claims', summary: 'print who holds what (live work claims); claims release ID ends one', load: async () => (await import('./claims-command.js')).claimsCommand },
  { name: 'guard', summary: 'a git pre-commit hook: refuse a commit into another agent\'s claimed paths', load: async () => (await import('./claims-command.js')).guardCommand },
  { name: 'tail', summary: 'print the newest records; -f follows', load: async () => (await import('./ops-commands.js')).tailCommand },
  { name: 'checkpoint', summary: 'append a checkpoint over the records no checkpoint covers yet', load: async () => (await import('./checkpoint-command.js')).checkpointCommand },
  { name: 'verify', summary: 're-check every digest; prove this copy complete up to its newest checkpoint', load: async () => (await import('./ops-commands.js')).verifyCommand },
  { name: 'mirror', summary: 'fill this corpus from SRC with rsync (a read-only mirror)', load: async () => (await import('./mirror-command.js')).mirrorCommand },
  { name: 'keys', summary: 'manage the HMAC keys agents sign with (add, list, revoke)', load: async () => (await import('./key-commands.js')).keysCommand },
  { name: 'sign', summary: 'print an Authorization header for a request body (for curl)', load: async () => (await import('./key-commands.js')).signCommand },
  { name: 'bridge', summary: 'a stdio MCP server that forwards to an HTTP hub, signing what must be signed', load: async () => (await import('./bridge-command.js')).bridgeCommand },
];

export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** The "Commands:" lines of the main help. */
export function commandSummaries(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n');
}
