/**
 * The hub's view of keys/: the key files are read at every verification (a
 * revoked key stops working at once, with no cache to go stale), and
 * chokidar watches the directory so that a key removed or replaced ends the
 * agent's open waits and streams without a restart.
 *
 * keys/ holds a handful of small files, so chokidar's one-watch-per-file
 * default costs nothing here; this is the place it earns (spec §7).
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import fs from 'node:fs/promises';
import { watch, type FSWatcher } from 'chokidar';
import { RelayError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { keyPaths } from '../disk/paths.js';
import { agentOfKeyFile, listKeys, loadKey } from './keys.js';

export interface KeyRingEvents {
  /** The agent's key file was removed or replaced: whatever it signed before no longer stands. */
  revoked: [string];
  added: [string];
}

export interface KeySource {
  keyOf(agent: string): Promise<Buffer | null>;
}

export class KeyRing extends EventEmitter<KeyRingEvents> implements KeySource {
  readonly dir: string;
  private watcher: FSWatcher | null = null;
  private readonly log: Logger;
  /** What was last logged about each broken key file, so a flood of requests logs it once. */
  private readonly reported = new Map<string, string>();
  /** A digest of each agent's usable key as last seen, to tell a replaced key from a file merely touched. */
  private readonly fingerprints = new Map<string, string>();
  private looking: Promise<void> = Promise.resolve();

  private constructor(dir: string, log: Logger) {
    super();
    this.dir = keyPaths(dir).keys;
    this.log = log;
  }

  /** Opens the ring; with `watch`, resolves once the watcher is ready, so a revoke right after is seen. */
  static async open(dir: string, options: { watch?: boolean; log?: Logger } = {}): Promise<KeyRing> {
    const ring = new KeyRing(dir, options.log ?? silentLogger);
    // The hub watches keys/ for its whole life; an empty directory made now
    // lets `keys add` later be noticed without a restart.
    await fs.mkdir(ring.dir, { recursive: true, mode: 0o700 });
    if (options.watch ?? true) await ring.startWatching();
    // Report broken key files at start (a directory named x.key included, which agents() skips).
    for (const name of await fs.readdir(ring.dir)) {
      const agent = agentOfKeyFile(name);
      if (agent === null) continue;
      const fingerprint = await ring.fingerprint(agent);
      if (fingerprint !== null) ring.fingerprints.set(agent, fingerprint);
    }
    return ring;
  }

  /** The agent's key; null for an agent with no key file; key_unusable (logged for the operator) for a broken one. */
  async keyOf(agent: string): Promise<Buffer | null> {
    const found = await loadKey(this.dir, agent);
    if (found === null || 'key' in found) {
      this.reported.delete(agent);
      return found?.key ?? null;
    }
    if (this.reported.get(agent) !== found.problem) {
      this.reported.set(agent, found.problem);
      this.log.warn(`${keyPaths(this.dir).key(agent)} cannot be used: ${found.problem}. Requests signed as ${agent} are refused until it is fixed.`);
    }
    // The caller learns that the file is broken, not how: that is the operator's to read in the log.
    throw new RelayError('key_unusable', `This hub holds a key file for agent "${agent}" but cannot use it, ` +
      `so the request was refused before anything ran. ` +
      `Ask the hub's operator to fix it; the hub's log says what is wrong.`, { reason: 'key_unusable' });
  }

  async agents(): Promise<string[]> {
    return (await listKeys(this.dir)).map((k) => k.agent);
  }

  async close(): Promise<void> {
    const w = this.watcher;
    this.watcher = null;
    if (!w) return;
    // chokidar 5 can start a closed watcher again: a removed key file's stat,
    // under way when close() ran, fails into _remove(), which calls add() to
    // wait for the file to come back, and add() clears `closed`; with keys/
    // gone it climbs to the nearest directory that exists and watches that,
    // and nothing closes it. A hub whose keys/ went as SIGTERM came never
    // exited (test/http/shutdown.process.test.ts). So its add() does nothing from here.
    w.add = () => w;
    await w.close();
  }

  private startWatching(): Promise<void> {
    const watcher = watch(this.dir, { depth: 0, ignoreInitial: true, persistent: true });
    this.watcher = watcher;
    watcher.on('add', (file) => this.seen('add', file));
    watcher.on('change', (file) => this.seen('change', file));
    watcher.on('unlink', (file) => this.seen('unlink', file));
    watcher.on('error', (err) => this.log.warn(`watching ${this.dir} for key changes failed: ${(err as Error).message}`));
    return new Promise((resolve) => watcher.once('ready', () => resolve()));
  }

  /** Looks at what a watcher event did, one event at a time, in the order they came. */
  private seen(event: 'add' | 'change' | 'unlink', file: string): void {
    const agent = agentOfKeyFile(file);
    if (agent === null) return;
    this.looking = this.looking.then(() => this.look(event, agent)).catch(() => {});
  }

  /**
   * A change is a revocation only if the agent's usable key is gone or is
   * now another key. A file's link count or times change without its key
   * changing (`keys add` links the finished file, then removes the temp
   * name), and ending the agent's waits for that would be wrong.
   */
  private async look(event: 'add' | 'change' | 'unlink', agent: string): Promise<void> {
    const before = this.fingerprints.get(agent);
    const now = event === 'unlink' ? null : await this.fingerprint(agent); // a broken file is reported now, not at its first request
    if (now === null) this.fingerprints.delete(agent);
    else this.fingerprints.set(agent, now);
    if (before !== undefined && now === before) return;
    if (before !== undefined || event === 'unlink') {
      this.log.info(`key of agent ${agent} revoked or replaced; ending its waits and streams`);
      this.emit('revoked', agent);
    } else if (now !== null || event === 'add') {
      this.log.info(`key added for agent ${agent}`);
      this.emit('added', agent);
    }
  }

  /** A digest of the agent's usable key (never the key itself), or null when it has none. */
  private async fingerprint(agent: string): Promise<string | null> {
    const key = await this.keyOf(agent).catch(() => null);
    return key === null ? null : createHash('sha256').update(key).digest('hex');
  }
}
