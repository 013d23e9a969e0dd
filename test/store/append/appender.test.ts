/**
 * The appender's one look outside its pass: a reply may name its parent's
 * author, who is then never an unknown recipient, even when a peer stored
 * that parent a moment ago and nothing here has heard of it yet. Two real
 * stores on one temp corpus, neither watching, so only the issued log tells.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../../lib/store/store.js';
import { cleanup } from '../../support/cleanup.js';
import { record, tempStore } from '../../support/helpers.js';

test('a reply to a record a peer stored a moment ago names its author as known, under --strict-recipients', async (t) => {
  const { corpus } = await tempStore(t);
  const ana = await openStore({ corpus, watch: 'none', strictRecipients: true });
  const cli = await openStore({ corpus, watch: 'none' });
  cleanup(t, () => Promise.all([ana.close(), cli.close()]));
  await ana.append(Buffer.from(record({ kind: 'note', from: 'ana' }, 'ana is here')), { depositedBy: 'mcp', agent: 'ana' });
  const asked = await cli.append(Buffer.from(record({ kind: 'question', from: 'dave', to: 'ana' }, 'which port?')), { depositedBy: 'cli/dave' });
  const answer = await ana.append(Buffer.from(record({ kind: 'answer', from: 'ana', to: 'dave', parent: asked.id }, '8443')), { depositedBy: 'mcp', agent: 'ana' });
  assert.equal(answer.unknownRecipients, undefined);
  assert.equal(answer.id, 'relay-0003');
});
