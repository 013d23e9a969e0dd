/**
 * HMAC keys on disk: one file per agent, `keys/<agent>.key`, mode 0600.
 *
 * The key is the file's text, trimmed, used as bytes — so
 * `openssl dgst -sha256 -hmac "$(cat keys/a.key)"` reproduces a signature.
 * The agent name becomes a file name, which is why it is held to a narrow
 * shape before it ever reaches a path.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../errors.js';
import { keyPaths } from '../store/paths.js';

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
    throw new RelayError('bad_request', `"${agent}" is not a usable agent name: it names a file, so it must be 1–64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit.`);
  }
}

/**
 * The agent's key, trimmed, or null when there is none. An empty file is no
 * key at all: an empty HMAC key would let anyone sign.
 */
export async function readKey(keysDir: string, agent: string): Promise<Buffer | null> {
  if (!isAgentName(agent)) return null;
  let text: string;
  try {
    text = await fs.readFile(keyPaths(keysDir).key(agent), 'utf8');
  } catch {
    return null;
  }
  const key = text.trim();
  return key ? Buffer.from(key, 'utf8') : null;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The hub's look at a key file: the key, null when there is no file (an
 * unknown agent), or what is wrong with the file. A key others can read is
 * not a secret any more, and an empty one would let anyone sign, so both are
 * refused, as are files that are not files or not text.
 */
export async function loadKey(keysDir: string, agent: string): Promise<{ key: Buffer } | { problem: string } | null> {
  if (!isAgentName(agent)) return null;
  const file = keyPaths(keysDir).key(agent);
  let stat;
  try {
    stat = await fs.stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? null : { problem: `it cannot be examined (${code})` };
  }
  if (!stat.isFile()) return { problem: 'it is not a regular file' };
  if ((stat.mode & 0o077) !== 0) return { problem: `other users can read or write it (mode ${(stat.mode & 0o777).toString(8)}); run \`chmod 600 ${file}\`` };
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? null : { problem: `it cannot be read (${code})` };
  }
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return { problem: 'it is not UTF-8 text' };
  }
  const key = text.trim();
  return key ? { key: Buffer.from(key, 'utf8') } : { problem: 'it is empty' };
}

/** Creates keys/<agent>.key (0600) holding 32 random bytes as hex; returns its path. Never prints or returns the key. */
export async function addKey(keysDir: string, agent: string): Promise<string> {
  checkAgent(agent);
  const kp = keyPaths(keysDir);
  await fs.mkdir(kp.keys, { recursive: true, mode: 0o700 });
  const file = kp.key(agent);
  let handle: fs.FileHandle;
  try {
    // O_EXCL: never overwrite a key someone already holds.
    handle = await fs.open(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new RelayError('bad_request', `Agent ${agent} already has a key at ${file}. Revoke it first (\`p-e-relay keys revoke ${agent}\`) if you mean to replace it.`);
    }
    throw err;
  }
  try {
    await handle.writeFile(`${randomBytes(32).toString('hex')}\n`);
    await handle.chmod(0o600); // the umask may have narrowed nothing, but never widen
  } finally {
    await handle.close();
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
      throw new RelayError('bad_request', `Agent ${agent} has no key at ${file}, so there is nothing to revoke. \`p-e-relay keys list\` shows the agents that have one.`);
    }
    throw err;
  }
  return file;
}
