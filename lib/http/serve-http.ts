/**
 * `serve --http` as a process: open the store, start the hub, tell the
 * operator on stderr where it listens, what it serves and whether anyone
 * can sign yet, then run until SIGINT/SIGTERM (or, with exitWithParent,
 * until the process that started it is gone: `npm start` run in a terminal
 * whose npm is killed must not leave a hub holding the port), and stop
 * within a deadline (shutdown.ts).
 */
import path from 'node:path';
import { RelayError } from '../errors.js';
import type { Logger } from '../log.js';
import { listKeys } from '../auth/keys.js';
import { RelayStore, type StoreOptions } from '../store/store.js';
import { startHub, type HubOptions } from './server.js';
import { armShutdown } from './shutdown.js';
import { CheckpointSchedule, type CheckpointCadence, type CheckpointSigner } from '../store/checkpoint-writer.js';

export interface ServeHttpOptions extends Omit<HubOptions, 'store' | 'log'> {
  store: StoreOptions;
  log: Logger;
  stderr: NodeJS.WritableStream;
  /** End when the parent process goes away (it is re-parented): what `npm start` users expect. */
  exitWithParent?: boolean;
  /** From the request to stop to the exit, at most (SHUTDOWN_DEADLINE_MS by default). */
  shutdownDeadlineMs?: number;
  /** How the banner names the CLI in the commands it suggests (the way it was run; lib/cli/invoked-as.ts). */
  command?: string;
  /** Append checkpoint records at this cadence (lib/store/checkpoint-writer.ts); none when absent or read-only. */
  checkpoints?: { cadence: CheckpointCadence; signer: CheckpointSigner };
}

export async function serveHttp(options: ServeHttpOptions): Promise<void> {
  const { stderr } = options;
  const parent = process.ppid; // before anything is awaited: the parent may be gone by the time we serve
  const say = (line: string) => stderr.write(`p-e-relay: ${line}\n`);
  const store = await RelayStore.prepare(options.store);
  const hub = await startHub({ ...options, store, log: options.log }).catch(async (err: unknown) => {
    await store.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new RelayError('port_in_use',
      `Port ${options.port} on ${options.host} is already in use. ` +
      `Pick another with --port N (0 takes any free port), or stop whatever holds it.`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new RelayError('address_not_local',
      `Cannot listen on ${options.host}: it is not an address of this machine. ` +
      `Use --host 127.0.0.1 (the default) or an address this machine has.`);
    throw err;
  });
  const checkpoints = options.checkpoints && !store.readOnly ? new CheckpointSchedule(store, options.checkpoints.cadence, options.checkpoints.signer, options.log).start() : null;
  // Armed before the banner: whoever reads it may signal at once, and a
  // signal with no listener yet would kill the hub with nothing closed.
  const shutdown = armShutdown({ say, deadlineMs: options.shutdownDeadlineMs });
  if (options.exitWithParent) {
    // No signal reaches us when a parent is SIGKILLed; being re-parented is how we learn it.
    setInterval(() => process.ppid !== parent && shutdown.stop('the process that started it is gone'), 500).unref();
  }
  let stopping = false;
  say(`serving ${hub.url} (MCP: POST ${hub.url}/mcp · REST: ${hub.url}/relays · events: ${hub.url}/events)`);
  if (options.forward) say(`replica: reads and waits from this mirror; each append is sent to the primary at ${options.forward.primary}, signed as its agent with the key here`);
  else if (store.readOnly) say(`read-only: appends are refused${store.primary ? `; they go to ${store.primary}` : ''}`);

  const keys = await listKeys(options.keys);
  const keysDir = path.resolve(options.keys);
  say(keys.length > 0 ? `keys: ${keys.length} in ${keysDir} (${keys.map((k) => k.agent).join(', ')})` : noKeysLine(keysDir, store.readOnly, options.command ?? 'p-e-relay'));
  // A signal during the start-up scan stops it (store.close() ends the scan at its next file).
  await Promise.race([
    store.ready.then(
      () => stopping || say(`corpus: ${store.paths.corpus} (${store.size} record${store.size === 1 ? '' : 's'})`),
      (err) => stopping || say(`corpus: ${store.paths.corpus} cannot be read: ${(err as Error).message}`),
    ),
    shutdown.requested,
  ]);

  const why = await shutdown.requested;
  stopping = true;
  say(`shutting down (${why}); a second signal stops it at once`);
  await shutdown.run([
    { name: 'the HTTP server', run: () => hub.close() },
    { name: 'the checkpoints', run: () => checkpoints?.close() ?? Promise.resolve() },
    { name: 'the store', run: () => store.close() },
  ]);
}

/**
 * The banner's line for a hub with no key yet. A mirror stores nothing, so
 * its keys are for waits and streams only, and they are the primary's keys
 * (a new one added here would sign for an agent the primary does not know).
 */
function noKeysLine(keysDir: string, readOnly: boolean, command: string): string {
  const keysFlag = keysDir === path.resolve('keys') ? '' : ` --keys ${keysDir}`;
  if (readOnly) {
    return `keys: none in ${keysDir}; this mirror refuses every append whatever its key, ` +
      `but waits and streams over HTTP must be signed: copy the agents' key files from the primary's keys/ ` +
      `into ${keysDir} (mode 0600; the hub picks them up without a restart)`;
  }
  return `keys: none yet in ${keysDir}; appends and waits over HTTP must be signed, so add one with \`${command} keys add AGENT${keysFlag}\` (the hub picks it up without a restart)`;
}
