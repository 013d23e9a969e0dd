/**
 * The key the bridge signs with: keys/<agent>.key, read afresh for every
 * signed call through the one key-file reader (lib/auth/keys.ts). Reading
 * per call costs one small file read and means a key the operator replaces
 * is used from the next call on, with no restart and no copy of the key kept
 * in memory between calls.
 *
 * Unlike the hub (where a missing key is simply "unknown agent"), the bridge
 * must tell its user exactly what is wrong with the file, so each failure has
 * its own sentence. Nothing here ever puts the key in a message.
 */
import { RelayError } from '../errors.js';
import { readKeyFile } from '../auth/keys.js';
import { keyPaths } from '../disk/paths.js';

/** One agent's key file, as the bridge signs with it. */
export interface SigningKey {
  readonly agent: string;
  readonly file: string;
  /** The key, trimmed, as bytes; or a key_unusable RelayError saying what is wrong with the file. */
  load(): Promise<Buffer>;
}

export function bridgeKey(keysDir: string, agent: string): SigningKey {
  const file = keyPaths(keysDir).key(agent);
  const fix = `Put agent ${agent}'s key (the hub's operator makes it with \`p-e-relay keys add ${agent}\`) ` +
    `in ${file}, mode 0600, or point --keys at the directory that holds ${agent}.key. ` +
    `Reads (exists, get_relay, list_relays, list_replies) need no key.`;
  const unusable = (what: string, cause: string) =>
    new RelayError('key_unusable', `The bridge cannot sign append_relay or wait_for_relay: ${what}, so nothing was sent to the hub. ${fix}`, { cause, keyFile: file });
  return {
    agent,
    file,
    async load() {
      const found = await readKeyFile(file);
      if (found.kind === 'missing') throw unusable(`there is no key file at ${file}`, 'ENOENT');
      // An empty key would sign with an empty HMAC key, which the hub refuses to hold.
      if (found.kind === 'unusable') throw unusable(`${file} ${found.problem}`, found.cause);
      return found.key;
    },
  };
}

/** A warning for a key file that is missing, unusable or readable by others, or null. Signing with a loose key still works; the hub cannot tell. */
export async function keyFileWarning(source: SigningKey): Promise<string | null> {
  const found = await readKeyFile(source.file);
  if (found.kind === 'missing') return `no key file at ${source.file} yet: reads will work, append_relay and wait_for_relay will be refused until it exists`;
  if (found.kind === 'unusable') return `${source.file} ${found.problem}: reads will work, append_relay and wait_for_relay will be refused until it is fixed`;
  if ((found.mode & 0o077) !== 0) return `${source.file} can be read by other users (mode ${found.mode.toString(8)}); \`chmod 600 ${source.file}\``;
  return null;
}
