/**
 * What the web view says when the hub refuses a person's key
 * (lib/web/refusal.js), fed the real hub's refusals of a signed /events:
 * a browser user is told which file to paste or whom to ask, never the
 * HMAC recipe the hub's sentence gives curl users. Runs in node (the module
 * touches no DOM); test/system/web.test.ts sees the same line in a real browser.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sign, startTestHub } from '../support/http-helpers.js';

// The page's own module, plain browser JavaScript (no types of its own).
const PAGE_MODULE = new URL('../../lib/web/refusal.js', import.meta.url).href;
const { keyRefusalText } = (await import(PAGE_MODULE)) as { keyRefusalText: (agent: string, code: string | null, sentence: string) => string };

async function refusalOf(url: string, agent: string, key: Uint8Array): Promise<{ error: string; message: string }> {
  const res = await fetch(`${url}/events`, { headers: { Authorization: sign(agent, key, 'GET'), Accept: 'text/event-stream' } });
  assert.equal(res.status, 401);
  return (await res.json()) as { error: string; message: string };
}

test('a wrong key: the page says to paste the hub\'s keys/AGENT.key, not how to compute an HMAC', async (t) => {
  const h = await startTestHub(t, { agents: ['web-watcher'] });
  const { error, message } = await refusalOf(h.url, 'web-watcher', Buffer.from('not-the-key'));
  assert.equal(error, 'bad_signature');
  assert.match(message, /HMAC/, 'the hub\'s own sentence is for curl users');
  const text = keyRefusalText('web-watcher', error, message);
  assert.match(text, /not the one in the hub's keys\/web-watcher\.key\. Paste that file's whole contents/);
  assert.doesNotMatch(text, /HMAC|sha256|\bts\b/);
});

test('an agent the hub has no key for: the page says whom to ask, and for which file', async (t) => {
  const h = await startTestHub(t, { agents: ['web-watcher'] });
  const { error, message } = await refusalOf(h.url, 'web-wacher', Buffer.from('anything'));
  assert.equal(error, 'unknown_agent');
  assert.match(keyRefusalText('web-wacher', error, message), /holds no key for web-wacher\. Check the name; .*keys add web-wacher.*keys\/web-wacher\.key/);
});

test('any other refusal quotes the hub\'s sentence', () => {
  assert.equal(keyRefusalText('a', 'too_many_streams', 'Four streams already.'), 'The hub refused the key for a: Four streams already. ');
});
