/**
 * The routes table (lib/http/routes.ts): each row says how its requests are
 * taken in, and the hub reads a body and checks a credential once, by it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Route } from '../../lib/http/routes.js';
import { ROUTES } from '../../lib/http/routes.js';
import { sign, startTestHub } from '../support/http-helpers.js';

test('a signed read of a path under a REST route that names nothing is checked once and refused no_route', async (t) => {
  const h = await startTestHub(t);
  const key = await h.key('scout-7');
  for (const path of ['/relays/relay-0001/replies/more', '/agents/']) {
    const signed = await fetch(`${h.url}${path}`, { headers: { Authorization: sign('scout-7', key, 'GET') }, signal: AbortSignal.timeout(5_000) });
    assert.deepEqual([signed.status, ((await signed.json()) as { error: string }).error], [404, 'no_route'], path);
    const wrong = await fetch(`${h.url}${path}`, { headers: { Authorization: sign('scout-7', Buffer.from('not the key'), 'GET') }, signal: AbortSignal.timeout(5_000) });
    assert.equal(wrong.status, 401, path);
    await wrong.body?.cancel();
  }
});

test('every method of the table that spends from the budget must be signed and spends its signature', () => {
  for (const [name, route] of Object.entries(ROUTES as Record<string, Route>)) {
    for (const [method, entry] of Object.entries(route.methods)) {
      if (!('intake' in entry)) continue;
      const { facts, spendsSignature } = entry.intake;
      if (facts.spends !== null) assert.ok(facts.signed && spendsSignature, `${method} ${name}`);
      else assert.equal(spendsSignature, false, `${method} ${name}: a read checks a signature and never spends it`);
    }
  }
});
