/**
 * A hook's record line says whose key proves the sender, as a wait's item
 * does: only a signed channel (mcp/NAME, http/NAME) proves a from:.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { itemHead } from '../../lib/cli/inbox-output.js';

const item = (depositedBy: string) => ({ kind: 'question', from: 'bob', to: 'ana', depositedBy });

test('a record a key proves carries no mark: http/NAME and mcp/NAME', () => {
  assert.equal(itemHead(item('http/bob')), ' (kind question, from bob, to ana) deposited-by http/bob');
  assert.equal(itemHead(item('mcp/bob')), ' (kind question, from bob, to ana) deposited-by mcp/bob');
});

test('a record no key proves says its sender is unproven: a stdio server\'s mcp, a local user\'s cli/USER', () => {
  assert.equal(itemHead(item('mcp')), ' (kind question, from bob, to ana) deposited-by mcp, sender unproven');
  assert.equal(itemHead(item('cli/bob')), ' (kind question, from bob, to ana) deposited-by cli/bob, sender unproven');
});
