/**
 * What a serving process says from its checkpoints (lib/store/checkpoint-frontier.ts):
 * a read-only mirror's empty wait says it is behind its newest checkpoint,
 * over MCP and in the CLI, and GET /checkpoints gives the verified frontier.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { silentLogger } from '../../lib/log.js';
import { CheckpointWriter } from '../../lib/store/checkpoint-writer.js';
import { openStore } from '../../lib/store/store.js';
import { record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { startTestHub } from '../support/http-helpers.js';
import { needs } from '../support/needs.js';

const QUIET = { P_E_RELAY_LOG: 'warn' };
const unsigned = async () => null;
/** A wait answer's first line, its waited ms (which vary) as N. */
const firstLine = (text: string) => text.split('\n')[0]!.replace(/ in \d+ ms /, ' in N ms ');

/** A primary of five records and a checkpoint (relay-0006), and its rsync mirror without relay-0003. */
async function mirrorBehind(t: Parameters<typeof tempStore>[0]) {
  const { dir, corpus } = await tempStore(t);
  const store = await openStore({ corpus, watch: 'none' });
  t.after(() => store.close());
  for (const body of ['a', 'b', 'c', 'd', 'e']) await store.append(Buffer.from(record({ kind: 'note' }, body)), { depositedBy: 'cli/test' });
  await new CheckpointWriter(store, unsigned, silentLogger).writeDue();
  const dest = path.join(dir, 'mirror');
  assert.equal((await runCli(['mirror', '--corpus', dest, corpus], { env: QUIET })).code, 0);
  await fs.rm(path.join(dest, 'relay-0003')); // as if rsync had not brought it yet
  return dest;
}

const BEHIND = 'nothing new (looked without waiting) here, but this replica is behind: checkpoint relay-0006 lists 1 record not here yet (relay-0003); they come with the next sync from the primary';

test('a read-only mirror\'s wait that finds nothing says it is behind its newest checkpoint, naming what has not arrived', needs('rsync'), async (t) => {
  const dest = await mirrorBehind(t);
  const { client } = await stdioClient(t, dest, ['--read-only']);
  const result = await client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0006', timeout_ms: 0 } });
  assert.equal(firstLine(textOf(result)), BEHIND);
  assert.deepEqual((result.structuredContent as { appeared: unknown[] }).appeared, []);

  const cli = await runCli(['wait', '--corpus', dest, '--after', 'relay-0006', '--timeout', '0'], { env: QUIET });
  assert.equal(cli.code, 3);
  assert.equal(firstLine(cli.stdout), BEHIND);
});

test('a mirror that holds all its newest checkpoint lists answers an empty wait as before', needs('rsync'), async (t) => {
  const dest = await mirrorBehind(t);
  await fs.copyFile(path.join(dest, '..', 'corpus', 'relay-0003'), path.join(dest, 'relay-0003'));
  const cli = await runCli(['wait', '--corpus', dest, '--after', 'relay-0006', '--timeout', '0'], { env: QUIET });
  assert.equal(firstLine(cli.stdout), 'nothing new (looked without waiting)');
});

test('GET /checkpoints: the frontier the hub verified from its index, and where it stops', async (t) => {
  const h = await startTestHub(t);
  const none = await (await fetch(`${h.url}/checkpoints`)).json();
  assert.deepEqual(none, { newest: null, verified: null, verifiedBy: null, behind: null, problem: null });
  for (const body of ['a', 'b']) await h.store.append(Buffer.from(record({ kind: 'note' }, body)), { depositedBy: 'cli/test' });
  const writer = new CheckpointWriter(h.store, unsigned, silentLogger);
  await writer.writeDue(); // relay-0003
  await h.store.append(Buffer.from(record({ kind: 'note' }, 'c')), { depositedBy: 'cli/test' });
  await writer.writeDue(); // relay-0005
  const f = await (await fetch(`${h.url}/checkpoints`, { headers: { accept: 'application/json' } })).json();
  assert.deepEqual(f, { newest: 'relay-0005', verified: 'relay-0004', verifiedBy: 'relay-0005', behind: null, problem: null });
});
