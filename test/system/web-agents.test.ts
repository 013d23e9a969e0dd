/**
 * The web view's roster and receipts in a real browser (headless Chromium,
 * as test/system/web.test.ts drives it) against a real hub, with real named stdio
 * servers on the same corpus being the agents it shows.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { BrowserContext } from 'playwright-core';
import { authorizationFor } from '../../lib/auth/sign.js';
import { initStore } from '../../lib/ops/init.js';
import { record, runCli, stdioClient } from '../support/helpers.js';
import { spawnHub, type HubProcess } from '../support/hub-process.js';
import { launchChromium } from '../support/browser.js';
import { needs } from '../support/needs.js';
import { said } from '../support/poll.js';

const WATCHER = 'web-watcher';
/** The roster is redrawn every 3 s; a few seconds more covers a slow machine. */
const WITHIN_MS = 10_000;

let dir: string;
let corpus: string;
let keys: string;
let hub: HubProcess;
let browser: BrowserContext;
const clients: Client[] = [];

async function named(agent: string): Promise<Client> {
  const { client } = await stdioClient(null, corpus, ['--agent', agent]);
  clients.push(client);
  return client;
}

const wait = (client: Client, timeout_ms = 0) => client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms } }, { timeout: 120_000 });

describe('the web view: roster and receipts', needs('chromium'), () => {
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-web-agents-'));
    corpus = path.join(dir, 'corpus');
    keys = path.join(dir, 'keys');
    await initStore({ corpus, keys });
    assert.equal((await runCli(['keys', 'add', WATCHER, '--keys', keys])).code, 0);
    hub = await spawnHub({ corpus, keys, port: 0, env: { P_E_RELAY_LOG: 'warn' }, timeoutMs: 10_000 });
    browser = await launchChromium(dir);
  });

  after(async () => {
    for (const client of clients) await client.close();
    await browser?.close();
    if (hub) await hub.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('the roster shows every agent that served, signed or holds a key, and who is waiting now', async () => {
    const bob = await named('bob');
    await wait(bob);
    const carol = await named('carol');
    await wait(carol);
    const page = await browser.newPage();
    await page.goto(`${hub.url}/`);
    for (const name of ['bob', 'carol', WATCHER]) await page.waitForSelector(`#roster .agent[data-agent="${name}"]`, { timeout: WITHIN_MS });
    assert.equal(await page.getAttribute('#roster .agent[data-agent="bob"]', 'data-waiting'), 'false');
    // bob blocks in its inbox wait: the roster says so within a redraw.
    const blocked = wait(bob, 60_000);
    await page.waitForSelector('#roster .agent[data-agent="bob"][data-waiting="true"]', { timeout: WITHIN_MS });
    assert.match((await page.getAttribute('#roster .agent[data-agent="bob"]', 'title')) ?? '', /last seen .*waiting now/);
    // A record to bob ends the wait (and shows bob as delivered in the next test).
    const body = Buffer.from(record({ kind: 'question', from: WATCHER, to: 'bob, carol' }, 'who has this?'));
    const response = await fetch(`${hub.url}/relays`, { method: 'POST', headers: { Authorization: authorizationFor(WATCHER, Buffer.from((await readFile(path.join(keys, `${WATCHER}.key`), 'utf8')).trim()), 'POST', body) }, body });
    assert.equal(response.status, 201, await response.clone().text());
    await blocked;
    await page.close();
  });

  test('a record\'s view says which of its named recipients it was delivered to, and which not yet', async () => {
    const [bob] = clients;
    // bob's next call proves it got what its last wait answered.
    await wait(bob!);
    const page = await browser.newPage();
    await page.goto(`${hub.url}/#relay-0001`);
    await page.waitForSelector('#record-pane .receipts:not([hidden]) .receipt.delivered[data-delivered="bob"]', { timeout: WITHIN_MS });
    assert.equal(await page.isVisible('#record-pane .receipt.pending[data-pending="carol"]'), true);
    assert.equal(await page.isVisible('#record-pane .receipt.delivered[data-delivered="carol"]'), false);
    // The receipts are the record's, under a heading of their own, before the replies' heading and their "No replies yet."
    await page.waitForSelector('#record-pane ul.replies[data-parent="relay-0001"] > li.none', { timeout: WITHIN_MS });
    const order = await page.$$eval('#record-pane h3, #record-pane .receipts .receipt, #record-pane ul.replies > li.none', (nodes) =>
      nodes.map((n) => (n.tagName === 'H3' ? `h3 ${n.textContent}` : n.textContent)));
    assert.deepEqual(order.slice(-5), ['h3 Delivery', '✓ bob', 'carol', 'h3 Replies', 'No replies yet.']);
    await page.close();
  });

  test('the roster shows each agent\'s about beside its name as text, never as markup', async () => {
    const about = '<img src=x onerror="window.pwned=1"> knows the web view & its roster';
    const { client, transport, stderr } = await stdioClient(null, corpus, ['--agent', 'dave', '--about', about], { P_E_RELAY_LOG: 'info' });
    clients.push(client);
    await said(transport.stderr as unknown as NodeJS.ReadableStream, stderr, /stored dave's about/, "dave's about");
    const page = await browser.newPage();
    await page.goto(`${hub.url}/`);
    await page.waitForSelector('#roster .agent[data-agent="dave"] .about', { timeout: WITHIN_MS });
    assert.equal(await page.textContent('#roster .agent[data-agent="dave"] .about'), about);
    assert.equal(await page.locator('#roster img').count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as { pwned?: number }).pwned), undefined);
    await page.close();
  });
});
