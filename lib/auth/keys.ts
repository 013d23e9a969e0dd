/**
 * HMAC keys on disk: one file per agent, `keys/<agent>.key`, mode 0600.
 *
 * The key is the file's text, trimmed, used as bytes — so
 * `openssl dgst -sha256 -hmac "$(cat keys/a.key)"` reproduces a signature.
 * The agent name becomes a file name, which is why it is held to a narrow
 * shape before it ever reaches a path.
 */
import { constants } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../errors.js';
import { BROADCAST, broadcastAgent } from '../model/agent-name.js';
import { keyPaths } from '../disk/paths.js';
import { linkExclusive, writeTemp } from '../disk/publish.js';

export const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const KEY_SUFFIX = '.key';

export function isAgentName(name: unknown): name is string {
  return typeof name === 'string' && AGENT_NAME.test(name);
}

/** The agent a key file belongs to, or null for any other name in keys/. */
export function agentOfKeyFile(file: string): string | null {
  const base = path.basename(file);
  if (!base.endsWith(KEY_SUFFIX)) return null;
  const agent = base.slice(0, -KEY_SUFFIX.length);
  return isAgentName(agent) ? agent : null;
}

function checkAgent(agent: string): void {
  if (!isAgentName(agent)) {
    throw new RelayError('bad_agent_name', `"${agent}" is not a usable agent name: it names a file, ` +
      `so it must be 1–64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit.`);
  }
}

/** What one key file holds, as read by the one reader below. */
export type KeyFile =
  | { kind: 'key'; key: Buffer; mode: number }
  | { kind: 'missing' }
  /** `problem` completes "the file …"; `cause` is an errno code, or `empty`, `not-utf8`, `not-regular`. */
  | { kind: 'unusable'; problem: string; cause: string };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/**
 * O_NONBLOCK: a FIFO named like a key must not hang the hub or the bridge (for
 * a regular file it changes nothing). O_NOFOLLOW: a `keys/` symlink to some
 * other file must not make that file a key (whoever can write `keys/` could
 * otherwise have the hub read any file it may read as an agent's key).
 */
const KEY_FILE_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;
/** A key is 64 hex characters; a key file far larger is not a key file, and is not read. */
export const MAX_KEY_FILE_BYTES = 4096;

/**
 * The one place a key file is read (the hub's verifier, `sign`, the bridge):
 * the key is the file's text, trimmed, as bytes. fstat on the open file says
 * what was opened, so what is checked is what is read. An empty file is no
 * key at all (an empty HMAC key would let anyone sign); the caller decides
 * what a loose mode means.
 */
export async function readKeyFile(file: string): Promise<KeyFile> {
  let handle: FileHandle;
  try {
    handle = await fs.open(file, KEY_FILE_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' };
    if (code === 'ELOOP' || code === 'EMLINK' || code === 'EFTYPE') return { kind: 'unusable', problem: 'is a symbolic link (a key file must be the file itself)', cause: 'symlink' };
    if (code === 'EACCES' || code === 'EPERM') return { kind: 'unusable', problem: 'cannot be read by this user (permission denied)', cause: code };
    return { kind: 'unusable', problem: `cannot be read (${code})`, cause: code };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { kind: 'unusable', problem: `is not a regular file${stat.isDirectory() ? ' but a directory' : ''}`, cause: stat.isDirectory() ? 'EISDIR' : 'not-regular' };
    if (stat.size > MAX_KEY_FILE_BYTES) return { kind: 'unusable', problem: `is ${stat.size} bytes, far larger than a key (at most ${MAX_KEY_FILE_BYTES})`, cause: 'too-large' };
    let bytes: Buffer;
    try {
      const buf = Buffer.alloc(MAX_KEY_FILE_BYTES + 1);
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      if (bytesRead > MAX_KEY_FILE_BYTES) return { kind: 'unusable', problem: `grew past ${MAX_KEY_FILE_BYTES} bytes while being read`, cause: 'too-large' };
      bytes = buf.subarray(0, bytesRead);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      return { kind: 'unusable', problem: `cannot be read (${code})`, cause: code };
    }
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      return { kind: 'unusable', problem: 'is not UTF-8 text', cause: 'not-utf8' };
    }
    const key = text.trim();
    return key ? { kind: 'key', key: Buffer.from(key, 'utf8'), mode: stat.mode & 0o777 } : { kind: 'unusable', problem: 'is empty', cause: 'empty' };
  } finally {
    await handle.close();
  }
}

/** The agent's key, or null when it has no usable one (for `sign` and tests: no policy on the mode). */
export async function readKey(keysDir: string, agent: string): Promise<Buffer | null> {
  if (!isAgentName(agent)) return null;
  const found = await readKeyFile(keyPaths(keysDir).key(agent));
  return found.kind === 'key' ? found.key : null;
}

/**
 * The hub's look at a key file: the key, null when there is no file (an
 * unknown agent), or what is wrong with it. A key others can read is not a
 * secret any more, so it is refused like a broken one.
 */
export async function loadKey(keysDir: string, agent: string): Promise<{ key: Buffer } | { problem: string } | null> {
  if (!isAgentName(agent)) return null;
  const file = keyPaths(keysDir).key(agent);
  const found = await readKeyFile(file);
  if (found.kind === 'missing') return null;
  if (found.kind === 'unusable') return { problem: `it ${found.problem}` };
  if ((found.mode & 0o077) !== 0) return { problem: `other users can read or write it (mode ${found.mode.toString(8)}); run \`chmod 600 ${file}\`` };
  return { key: found.key };
}

/**
 * Creates keys/<agent>.key (0600) holding 32 random bytes as hex; returns its
 * path. Never prints or returns the key. The file is written whole under a
 * temp name and linked into place, as records are: a hub watching keys/ sees
 * the key arrive complete (never an empty file that then changes, which it
 * would take for a revocation), and link() refuses a name already taken, so
 * a key someone holds is never overwritten.
 */
export async function addKey(keysDir: string, agent: string): Promise<string> {
  checkAgent(agent);
  if (agent === BROADCAST) throw broadcastAgent(false);
  const kp = keyPaths(keysDir);
  await fs.mkdir(kp.keys, { recursive: true, mode: 0o700 });
  const file = kp.key(agent);
  const secret = process.getBuiltinModule('node:crypto').randomBytes(32).toString('hex');
  const temp = await writeTemp(kp.keys, Buffer.from(`${secret}\n`), 0o600); // not named *.key: no watcher acts on it
  try {
    if (!(await linkExclusive(temp, file))) {
      throw new RelayError('key_exists', `Agent ${agent} already has a key at ${file}. Revoke it first (\`p-e-relay keys revoke ${agent}\`) if you mean to replace it.`, { agent });
    }
  } finally {
    await fs.unlink(temp).catch(() => {});
  }
  return file;
}

export interface KeyEntry {
  agent: string;
  path: string;
  /** Permission bits, e.g. 0o600. */
  mode: number;
}

/** Every agent with a key file, in name order. */
export async function listKeys(keysDir: string): Promise<KeyEntry[]> {
  const kp = keyPaths(keysDir);
  let names: string[];
  try {
    names = await fs.readdir(kp.keys);
  } catch {
    return [];
  }
  const out: KeyEntry[] = [];
  for (const name of names.sort()) {
    const agent = agentOfKeyFile(name);
    if (agent === null) continue;
    const file = kp.key(agent);
    const stat = await fs.stat(file).catch(() => null);
    if (stat?.isFile()) out.push({ agent, path: file, mode: stat.mode & 0o777 });
  }
  return out;
}

/** Deletes keys/<agent>.key; a running hub ends that agent's open waits and streams. Returns the path removed. */
export async function revokeKey(keysDir: string, agent: string): Promise<string> {
  checkAgent(agent);
  const file = keyPaths(keysDir).key(agent);
  try {
    await fs.unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new RelayError('unknown_agent', `Agent ${agent} has no key at ${file}, so there is nothing to revoke. \`p-e-relay keys list\` shows the agents that have one.`);
    }
    throw err;
  }
  return file;
}
