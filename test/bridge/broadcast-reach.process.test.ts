/**
 * A broadcast reaches the team (spec §8d): `to: all` reaches every agent the
 * relay knew when the record landed (a key on the hub, a named stdio server),
 * however late that agent's first call; a name first known after it does not
 * get it. Real hub, real bridges and stdio servers, the SDK's client. Run
 * `npm run build` first.
 */
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { addKey, readKey } from '../../lib/auth/keys.js';
import { silentLogger } from '../../lib/log.js';
import { Roster } from '../../lib/store/store.js';
import { stdioClient, tempStore } from '../support/helpers.js';
import { appendRecord, bridgeClient, hubStore, inboxIds, startHubProcess } from '../support/bridge-helpers.js';
import { httpClient } from '../support/http-helpers.js';
import { eventually } from '../support/poll.js';

/** Resolves once the relay has noted where the agent's broadcasts begin (the file its marks start from). */
const noted = (corpus: string, agent: string) =>
  eventually(() => access(path.join(corpus, '.state', 'marks', agent, '.start')).then(() => true, () => false), `${agent}'s start to be noted`);

test('on a hub, agents whose keys were made before a broadcast get it, though their first call comes 0.3 s after it', async (t) => {
  const store = await hubStore(t, { agents: ['op', 'ana', 'bob'] });
  const hub = await startHubProcess(t, { store });
  const op = await httpClient(t as never, hub.url, { agent: 'op', key: (await readKey(store.keys, 'op'))! });
  const question = await appendRecord(op, { kind: 'question', from: 'op', to: 'all' }, 'go or no-go?');
  await sleep(300); // the agents' first calls come a moment after the broadcast, as in a real start
  const ana = (await bridgeClient(t, hub.url, 'ana', store.keys)).client;
  const bob = await httpClient(t as never, hub.url, { agent: 'bob', key: (await readKey(store.keys, 'bob'))! });
  assert.deepEqual(await inboxIds(ana, 0), [question], 'through a bridge');
  assert.deepEqual(await inboxIds(bob, 0), [question], 'signing directly');
});

test('on a hub, a key made while it runs is known from then: a later broadcast reaches it; one from before does not', async (t) => {
  const store = await hubStore(t, { agents: ['op'] });
  const hub = await startHubProcess(t, { store });
  const op = await httpClient(t as never, hub.url, { agent: 'op', key: (await readKey(store.keys, 'op'))! });
  const before = await appendRecord(op, { kind: 'note', from: 'op', to: 'all' }, 'before carol');
  await addKey(store.keys, 'carol');
  await noted(store.corpus, 'carol');
  const after = await appendRecord(op, { kind: 'question', from: 'op', to: 'all' }, 'after carol');
  await sleep(300);
  const carol = (await bridgeClient(t, hub.url, 'carol', store.keys)).client;
  assert.deepEqual(await inboxIds(carol, 0), [after], `not ${before}, from before carol was known`);
});

test('a named stdio server is known from its start: a broadcast before its first call reaches it, one before its start does not', async (t) => {
  const { corpus } = await tempStore(t);
  const op = (await stdioClient(t, corpus, ['--agent', 'op'])).client;
  const before = await appendRecord(op, { kind: 'note', from: 'op', to: 'all' }, 'before ana');
  const ana = (await stdioClient(t, corpus, ['--agent', 'ana'])).client;
  await noted(corpus, 'ana');
  const after = await appendRecord(op, { kind: 'question', from: 'op', to: 'all' }, 'after ana started');
  await sleep(300);
  assert.deepEqual(await inboxIds(ana, 0), [after], `not ${before}`);
});

test('a name on the roster when the hub opens is known from then, though it has no key there and first calls over stdio', async (t) => {
  const store = await hubStore(t, { agents: ['op'] });
  // As `keys add eve` with a keys directory of its own beside this corpus leaves it: on the roster, no key on the hub.
  await new Roster(path.join(store.corpus, '.state', 'roster'), silentLogger).seen('eve', 'key');
  const hub = await startHubProcess(t, { store });
  const op = await httpClient(t as never, hub.url, { agent: 'op', key: (await readKey(store.keys, 'op'))! });
  await noted(store.corpus, 'eve');
  const question = await appendRecord(op, { kind: 'question', from: 'op', to: 'all' }, 'eve too?');
  const eve = (await stdioClient(t, store.corpus, ['--agent', 'eve'])).client;
  assert.deepEqual(await inboxIds(eve, 0), [question]);
});
