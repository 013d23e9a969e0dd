/**
 * Bad key files in keys/ on a running hub: readable by other users, empty,
 * blank, not text, not a file at all. Each is named in the hub's log with
 * what to do, its agent's signed requests are refused (401 key_unusable)
 * with nothing stored, and every other agent and every read is served as
 * before. A fixed file works at once, without a restart.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { record, tempStore } from '../support/helpers.js';
import { sign } from '../support/http-helpers.js';
import { corpusFingerprint, hubProcess } from '../support/reliability-helpers.js';
import { said } from '../support/poll.js';

/** Some text that is a plausible key, for signing on behalf of an agent whose file is broken. */
const SOME_KEY = Buffer.from('0123456789abcdef0123456789abcdef');

test('bad key files are logged with the fix and refused as key_unusable; other agents and reads go on; a fixed file works without a restart', async (t) => {
  const { corpus, keys } = await tempStore(t);
  await addKey(keys, 'good');
  await addKey(keys, 'loose');
  await chmod(path.join(keys, 'loose.key'), 0o644);
  await writeFile(path.join(keys, 'empty.key'), '', { mode: 0o600 });
  await writeFile(path.join(keys, 'blank.key'), ' \n\t\n', { mode: 0o600 });
  await writeFile(path.join(keys, 'binary.key'), Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x41]), { mode: 0o600 });
  await mkdir(path.join(keys, 'folder.key'), { mode: 0o700 });
  const hub = await hubProcess(t, corpus, keys, { env: { P_E_RELAY_LOG: 'info' } });

  // Reported at start, one line per file, each saying what is wrong.
  const expected: Record<string, RegExp> = {
    loose: /loose\.key cannot be used: other users can read or write it \(mode 644\); run `chmod 600 [^`]*loose\.key`/,
    empty: /empty\.key cannot be used: it is empty/,
    blank: /blank\.key cannot be used: it is empty/,
    binary: /binary\.key cannot be used: it is not UTF-8 text/,
    folder: /folder\.key cannot be used: it is not a regular file/,
  };
  for (const [agent, line] of Object.entries(expected)) assert.match(hub.stderr(), line, `the log names ${agent}.key`);

  const before = await corpusFingerprint(corpus);
  const loosKey = (await readKey(keys, 'loose'))!;
  for (const agent of Object.keys(expected)) {
    const body = record({ from: agent });
    const res = await fetch(`${hub.url}/relays`, { method: 'POST', body, headers: { Authorization: sign(agent, agent === 'loose' ? loosKey : SOME_KEY, 'POST', body) } });
    assert.equal(res.status, 401, agent);
    assert.match(res.headers.get('www-authenticate') ?? '', /^PE-HMAC .*error="key_unusable"/);
    const answer = (await res.json()) as { error: string; message: string };
    assert.equal(answer.error, 'key_unusable', agent);
    assert.match(answer.message, new RegExp(`key file for agent "${agent}".*operator`));
    assert.doesNotMatch(answer.message, /mode \d|chmod|is empty|UTF-8|regular file/, 'the caller is not told what is wrong with the operator\'s file');
  }
  assert.deepEqual(await corpusFingerprint(corpus), before, 'nothing was stored');
  assert.equal((hub.stderr().match(/loose\.key cannot be used/g) ?? []).length, 1, 'a broken file is logged once, not once per request');

  // Everyone else is served.
  const body = record({ from: 'good' });
  const good = await fetch(`${hub.url}/relays`, { method: 'POST', body, headers: { Authorization: sign('good', (await readKey(keys, 'good'))!, 'POST', body) } });
  assert.equal(good.status, 201);
  assert.equal((await fetch(`${hub.url}/relays/relay-0001`)).status, 200);

  // Fixed on disk, usable at once.
  await chmod(path.join(keys, 'loose.key'), 0o600);
  const fixed = record({ from: 'loose', kind: 'fixed' });
  const res = await fetch(`${hub.url}/relays`, { method: 'POST', body: fixed, headers: { Authorization: sign('loose', loosKey, 'POST', fixed) } });
  assert.equal(res.status, 201);

  // A key file that turns bad while the hub runs is reported when it changes.
  await writeFile(path.join(keys, 'late.key'), 'a-key-written-by-hand-0123456789\n', { mode: 0o644 });
  await chmod(path.join(keys, 'late.key'), 0o644);
  await said(hub.child.stderr!, hub.stderr, /late\.key cannot be used: other users can read or write it/, 'the hub to report a loose key added while it runs');
});
