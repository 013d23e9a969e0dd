/**
 * The hub's own key, which signs its checkpoints (lib/model/checkpoint.ts):
 * the HMAC key of a name in keys/, `hub` unless `--checkpoint-key` names
 * another — made like any agent's, with `p-e-relay keys add hub`.
 *
 * An HMAC key is a shared secret, so its signature proves something only
 * to those who hold the same key file: that a holder of it (the hub, or
 * whoever else has keys/hub.key) wrote the checkpoint. It proves nothing to
 * a mirror's operator without the key, and a holder could sign a false
 * checkpoint; the chain, not the signature, is what proves a copy complete
 * against the checkpoints it holds (docs/mirroring.md).
 */
import type { Logger } from '../log.js';
import { keyPaths } from '../disk/paths.js';
import { isAgentName, loadKey } from './keys.js';

export const DEFAULT_HUB_KEY = 'hub';

/** Reads the key at every checkpoint (a key added or fixed later is used from then on); null signs nothing. */
export function hubKeySigner(keysDir: string, name: string, log: Logger): () => Promise<{ name: string; key: Uint8Array } | null> {
  let said = '';
  const sayOnce = (line: string) => {
    if (line !== said) log.info((said = line));
  };
  return async () => {
    const found = isAgentName(name) ? await loadKey(keysDir, name) : null;
    if (found !== null && 'key' in found) {
      sayOnce(`checkpoints are signed with ${keyPaths(keysDir).key(name)}`);
      return { name, key: found.key };
    }
    const file = keyPaths(keysDir).key(name);
    sayOnce(found === null ? `checkpoints are unsigned: there is no ${file} (\`p-e-relay keys add ${name}\` makes one)` : `checkpoints are unsigned: ${file} cannot be used (${found.problem})`);
    return null;
  };
}
