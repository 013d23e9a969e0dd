/**
 * Verifying a credential, in the order that costs least and tells most:
 * the agent must have a key, the ts must be fresh, the signature must match
 * (compared in constant time), and only then is it spent in the one-time
 * guard — so a forged or stale credential never fills the guard.
 *
 * Every refusal is a 401 RelayError whose code names the reason. Nothing
 * here logs a key or a signature.
 */
import { timingSafeEqual } from 'node:crypto';
import { RelayError } from '../errors.js';
import { BROADCAST, broadcastAgent } from '../model/agent-name.js';
import type { KeySource } from './key-ring.js';
import type { SignatureGuard } from './replay-guard.js';
import { checkFreshness, computeSignature, type Credential } from './sign.js';

export interface Verifier {
  keys: KeySource;
  guard: SignatureGuard;
  now?: () => number;
}

/**
 * Returns the verified agent's name, or throws a 401 RelayError naming the
 * reason. With `spend` false a good signature is checked but not spent (a
 * signed read buys nothing, so it must not fill the guard).
 */
export async function verifyCredential(credential: Credential, method: string, body: Uint8Array, verifier: Verifier, spend = true): Promise<string> {
  const { agent, ts, sig } = credential;
  if (agent === BROADCAST) throw broadcastAgent(true);
  const key = await verifier.keys.keyOf(agent);
  if (key === null) {
    throw new RelayError('unknown_agent', `This hub holds no key for agent "${agent}", ` +
      `so it cannot check the signature. Sign as an agent that has a key here, ` +
      `or ask the operator to run \`p-e-relay keys add ${agent}\` and give you the key.`, { reason: 'unknown_agent' });
  }
  checkFreshness(ts, (verifier.now ?? Date.now)());
  const expected = Buffer.from(computeSignature(key, method, ts, body), 'hex');
  const given = Buffer.from(sig, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new RelayError(
      'bad_signature',
      `The signature does not match this request. ` +
        `sig must be the lowercase hex HMAC-SHA256, keyed with ${agent}'s key, ` +
        `of "${method}\\n" + ts + "\\n" + the sha256 hex of the exact body bytes sent. ` +
        `Check the key, the method and that the body was not re-encoded, then sign again.`,
      { reason: 'bad_signature' },
    );
  }
  if (!spend) return agent;
  if (!(await verifier.guard.accept(sig, ts, agent))) {
    throw new RelayError('replayed_signature', 'This signature was already used: each one is accepted once, ' +
      'on every hub process sharing this corpus. ' +
      'Sign the request again (a new ts, or a different body if you are sending the same one twice within a second).', { reason: 'replayed_signature' });
  }
  return agent;
}
