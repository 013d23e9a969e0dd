/** The pure half of lib/ops/rsync.ts: the command line and reading rsync's itemized lines. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contentsOf, isRemote, parseItemized, rsyncArgs } from '../../lib/ops/rsync.js';

test('rsync is told never to overwrite, never to copy .state/, and to copy contents, not the directory', () => {
  const args = rsyncArgs('/srv/primary', '/srv/mirror');
  for (const flag of ['-a', '--ignore-existing', '--exclude=/.state/']) assert.ok(args.includes(flag), flag);
  assert.ok(!args.some((a) => /^--(delete|inplace|append|checksum)/.test(a)), 'nothing that replaces or rewrites files in place');
  assert.deepEqual(args.slice(-2), ['/srv/primary/', '/srv/mirror/']);
  assert.deepEqual(rsyncArgs('h:/c', '/m', { rsh: 'ssh -p 2222' }).slice(-4, -2), ['--rsh', 'ssh -p 2222']);
});

test('host:path is remote, a local path is not, and host: alone stays the remote home directory', () => {
  assert.equal(isRemote('hub.example:/srv/corpus'), true);
  assert.equal(isRemote('user@hub:corpus'), true);
  assert.equal(isRemote('rsync://hub/relay'), true);
  assert.equal(isRemote('/srv/corpus'), false);
  assert.equal(isRemote('./odd:name'), false);
  assert.equal(contentsOf('hub:'), 'hub:./');
  assert.equal(contentsOf('hub:corpus/'), 'hub:corpus/');
});

test('itemized lines say which files are new; rsync\'s other messages are not items', () => {
  assert.deepEqual(parseItemized('>f+++++++++ relay-0042'), { type: 'f', created: true, name: 'relay-0042' });
  assert.deepEqual(parseItemized('.d..t...... ./'), { type: 'd', created: false, name: './' });
  assert.equal(parseItemized('skipping non-regular file "relay-0009"'), null);
});
