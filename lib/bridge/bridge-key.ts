/**
 * The key the bridge signs with: keys/<agent>.key, read afresh for every
 * signed call. Reading per call costs one small file read and means a key
 * the operator replaces is used from the next call on, with no restart and
 * no copy of the key kept in memory between calls.
 *
 * Unlike lib/auth/keys.ts readKey (the hub's view, where a missing key is
 * simply "unknown agent"), the bridge must tell its user exactly what is
 * wrong with the file, so each failure has its own sentence. Nothing here
 * ever puts the key in a message.
 */
import fs from 'node:fs/promises';
import { RelayError } from '../errors.js';
import { keyPaths } from '../store/paths.js';

export interface KeySource {
  readonly agent: string;
  readonly file: string;
  /** The key, trimmed, as bytes; or a key_unusable RelayError saying what is wrong with the file. */
  load(): Promise<Buffer>;
}

export function bridgeKey(keysDir: string, agent: string): KeySource {
  const file = keyPaths(keysDir).key(agent);
  const fix = `Put agent ${agent}'s key (the hub's operator makes it with \`p-e-relay keys add ${agent}\`) in ${file}, mode 0600, or point --keys at the directory that holds ${agent}.key. Reads (exists, get_relay, list_relays, list_replies) need no key.`;
  const unusable = (what: string, cause: string) =>
    new RelayError('key_unusable', `The bridge cannot sign append_relay or wait_for_relay: ${what}, so nothing was sent to the hub. ${fix}`, { cause, keyFile: file });
  return {
    agent,
    file,
    async load() {
      let text: string;
      try {
        text = await fs.readFile(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
        if (code === 'ENOENT') throw unusable(`there is no key file at ${file}`, code);
        if (code === 'EACCES' || code === 'EPERM') throw unusable(`${file} cannot be read by this user (permission denied)`, code);
        if (code === 'EISDIR') throw unusable(`${file} is a directory, not a key file`, code);
        throw unusable(`${file} cannot be read (${code})`, code);
      }
      const key = text.trim();
      // An empty key would sign with an empty HMAC key, which the hub refuses to hold.
      if (!key) throw unusable(`${file} is empty`, 'empty');
      return Buffer.from(key, 'utf8');
    },
  };
}

/** A warning for a key file others can read, or null. Signing still works; the hub cannot tell. */
export async function keyFileWarning(source: KeySource): Promise<string | null> {
  const stat = await fs.stat(source.file).catch(() => null);
  if (stat === null) return `no key file at ${source.file} yet: reads will work, append_relay and wait_for_relay will be refused until it exists`;
  if ((stat.mode & 0o077) !== 0) return `${source.file} can be read by other users (mode ${(stat.mode & 0o777).toString(8)}); \`chmod 600 ${source.file}\``;
  return null;
}
