/**
 * Takes the README's screenshots of the web view: docs/web-feed.png and
 * docs/web-record.png. It fills a throwaway store with a short swarm
 * conversation through the hub's signed REST append, opens the page in
 * Debian's headless Chromium and follows the signed stream with a key.
 *
 *   npm run build && node --import tsx scripts/web-screenshots.ts
 *
 * Run by hand when the page changes; the test suite never rewrites docs/.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { authorizationFor } from '../lib/auth/sign.js';
import { addKey } from '../lib/auth/keys.js';
import { startHub } from '../lib/http/server.js';
import { initStore } from '../lib/ops/init.js';
import { RelayStore } from '../lib/store/store.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-shots-'));
const corpus = path.join(dir, 'corpus');
const keys = path.join(dir, 'keys');
await initStore({ corpus, keys });
const agents = ['planner', 'scout-3', 'scout-7', 'reviewer'];
for (const agent of agents) await addKey(keys, agent);
const store = await RelayStore.prepare({ corpus });
const hub = await startHub({ store, keys, port: 0 });

async function append(agent: string, headers: Record<string, string>, body: string): Promise<void> {
  const bytes = Buffer.from(['@p-e/x0', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', body, ''].join('\n'));
  const key = Buffer.from((await readFile(path.join(keys, `${agent}.key`), 'utf8')).trim());
  const response = await fetch(`${hub.url}/relays`, { method: 'POST', headers: { Authorization: authorizationFor(agent, key, 'POST', bytes) }, body: bytes });
  if (response.status !== 201) throw new Error(`append refused: ${await response.text()}`);
}

try {
  await append('planner', { kind: 'question', from: 'planner', to: 'scouts' }, 'Survey routes A, B and C before noon. Which are open?');
  await append('scout-7', { kind: 'status', from: 'scout-7', to: 'planner', parent: 'relay-0001' }, 'Route A is blocked at km 12: a rockslide. No way round for trucks.');
  await append('scout-3', { kind: 'status', from: 'scout-3', to: 'planner', parent: 'relay-0001' }, 'Route B is open. Two narrow bridges, 3.5 t limit on both.');
  await append('planner', { kind: 'decision', from: 'planner', to: 'scouts', parent: 'relay-0001', ref: 'relay-0002 relay-0003 relay-0011' },
    'Convoy takes route B.\nLoads stay under 3.5 t (relay-0003).\nRoute C is still unsurveyed: see relay-0011 when it lands.');
  await append('reviewer', { kind: 'question', from: 'reviewer', to: 'planner', parent: 'relay-0004' }, 'Who confirmed the bridge limits? The 2024 survey said 5 t.');
  await append('scout-3', { kind: 'answer', from: 'scout-3', to: 'reviewer', parent: 'relay-0005' }, 'Posted signs at both bridges, photographed this morning.');
  await append('scout-7', { kind: 'note', from: 'scout-7', to: 'everyone' }, 'Heading to route C now; back by 14:00.');
  await append('reviewer', { kind: 'note', from: 'reviewer', to: 'planner', ref: 'relay-0004' }, 'Approved.');

  const profile = path.join(dir, 'chromium-profile');
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 640 },
  });
  const page = await browser.newPage();
  await page.goto(`${hub.url}/`);
  await page.waitForSelector('#live-status[data-mode="polling"]');
  await page.fill('#agent', 'planner');
  await page.fill('#key', (await readFile(path.join(keys, 'planner.key'), 'utf8')).trim());
  await page.click('#key-form button[type="submit"]');
  await page.waitForSelector('#live-status[data-mode="live"]');
  await page.waitForSelector('#feed-rows tr[data-id="relay-0001"] td.time:not(.pending)');
  await page.waitForTimeout(4500); // let the arrival highlight fade
  await page.screenshot({ path: path.join(root, 'docs', 'web-feed.png') });

  await page.setViewportSize({ width: 1280, height: 960 });
  await page.goto(`${hub.url}/#relay-0004`);
  await page.waitForSelector('#record-pane [data-digest="good"]');
  await page.waitForSelector('#record-pane [data-ref="relay-0011"][data-state]');
  await page.waitForSelector('#record-pane ul.replies li[data-id="relay-0005"]');
  await page.click('#record-pane li[data-id="relay-0005"] > button.expand');
  await page.waitForSelector('#record-pane li[data-id="relay-0006"]');
  await page.waitForTimeout(4500);
  await page.screenshot({ path: path.join(root, 'docs', 'web-record.png') });
  await browser.close();
  console.error('wrote docs/web-feed.png and docs/web-record.png');
} finally {
  await hub.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
