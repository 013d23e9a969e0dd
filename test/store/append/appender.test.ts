/**
 * The appender's one look outside its pass: a reply may name its parent's
 * author, who is then never an unknown recipient, even when a peer stored
 * that parent a moment ago and nothing here has heard of it yet. Two real
 * stores on one temp corpus, neither watching, so only the issued log tells.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../lib/log.js';
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

test('a reply naming a parent far past every id does not send the store looking for it: no ids are probed, no jump is logged', async (t) => {
  const { corpus } = await tempStore(t, { idWidth: 8 });
  const warnings: string[] = [];
  const log = { ...silentLogger, warn: (line: string) => void warnings.push(line) };
  const ana = await openStore({ corpus, watch: 'none', log });
  cleanup(t, () => ana.close());
  const reply = await ana.append(Buffer.from(record({ kind: 'answer', from: 'ana', to: 'dave', parent: 'relay-99999999' }, 'x')), { depositedBy: 'mcp', agent: 'ana' });
  assert.equal(reply.id, 'relay-00000001');
  assert.deepEqual(reply.unknownRecipients, ['dave']);
  assert.deepEqual(warnings, []);
  assert.equal((await ana.append(Buffer.from(record({ kind: 'note', from: 'ana' }, 'next')), { depositedBy: 'mcp', agent: 'ana' })).id, 'relay-00000002');
});
