/**
 * A name the relay comes to know (a key on the hub, a named stdio server)
 * has its broadcast start noted at once (spec §8d): noting it writes under
 * `.state/marks/` and nowhere else.
 */
import assert from 'node:assert/strict';
import { rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../../lib/store/store.js';
import { cleanup } from '../../support/cleanup.js';
import { tempStore } from '../../support/helpers.js';

test('noting a name after the corpus was moved away does not make an empty corpus in its place', async (t) => {
  const { dir, corpus } = await tempStore(t);
  const store = await openStore({ corpus });
  cleanup(t, () => store.close());
  await store.ready;
  await rename(corpus, path.join(dir, 'corpus-away'));
  await store.agents.known('alice', store.head);
  await assert.rejects(stat(corpus), { code: 'ENOENT' }, 'no empty corpus was made in its place');
});

test('noting a name makes .state/ again when only it was removed', async (t) => {
  const { corpus } = await tempStore(t);
  const store = await openStore({ corpus });
  cleanup(t, () => store.close());
  await store.ready;
  await rm(path.join(corpus, '.state'), { recursive: true });
  await store.agents.known('alice', store.head);
  assert.ok((await stat(path.join(corpus, '.state', 'marks', 'alice'))).isDirectory());
});
