/**
 * The web view in a real browser: Debian's headless Chromium, driven by
 * playwright-core, against a real hub process (`p-e-relay serve --http`)
 * on 127.0.0.1. Records are appended through the hub's signed REST append,
 * as any agent would.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { authorizationFor } from '../../lib/auth/sign.js';
import { initStore } from '../../lib/ops/init.js';
import { record, runCli } from '../support/helpers.js';
import { spawnHub, type HubProcess } from '../support/hub-process.js';
import { launchChromium } from '../support/browser.js';
import { needs } from '../support/needs.js';

const AGENT = 'web-watcher';
/** Polling runs every 3 s; a few seconds more covers a slow machine. */
const APPEARS_WITHIN_MS = 10_000;

let dir: string;
let corpus: string;
let keys: string;
let key: Buffer;
let hub: HubProcess;
let browser: BrowserContext;

function startHub(port = 0): Promise<HubProcess> {
  return spawnHub({ corpus, keys, port, env: { P_E_RELAY_LOG: 'info' }, timeoutMs: 10_000 });
}

/** The key of the agent a record says it is from (a signed append must be from its signer: from_mismatch), made on first use. */
const keysByAgent = new Map<string, Buffer>();
async function keyOf(agent: string): Promise<Buffer> {
  if (agent === AGENT) return key;
  if (!keysByAgent.has(agent)) {
    const added = await runCli(['keys', 'add', agent, '--keys', keys]);
    assert.equal(added.code, 0, added.stderr);
    keysByAgent.set(agent, Buffer.from((await readFile(path.join(keys, `${agent}.key`), 'utf8')).trim()));
  }
  return keysByAgent.get(agent)!;
}

/** Who signs a record: the agent its from: names, else the watcher. */
const signerOf = (text: string) => /^from: *(\S+)$/m.exec(text.slice(0, text.indexOf('\n\n')))?.[1] ?? AGENT;

/** Appends through POST /relays, signed like any agent's append, by the agent the record is from; answers the id. */
async function append(text: string): Promise<string> {
  const body = Buffer.from(text);
  const signer = signerOf(text);
  const response = await fetch(`${hub.url}/relays`, {
    method: 'POST',
    headers: { Authorization: authorizationFor(signer, await keyOf(signer), 'POST', body), 'Content-Type': 'text/plain' },
    body,
  });
  const answer = await response.text();
  assert.equal(response.status, 201, answer);
  const id = /relay-\d{4}/.exec(answer)?.[0];
  assert.ok(id, answer);
  return id;
}

interface WatchedPage {
  page: Page;
  /** Console errors and uncaught exceptions, CSP violations among them. */
  errors: string[];
  dialogs: string[];
  /** Errors other than the 404s a page logs when it asks about ids the hub does not hold. */
  unexpected(): string[];
}

async function openPage(hash = '', query = ''): Promise<WatchedPage> {
  const page = await browser.newPage();
  const errors: string[] = [];
  const dialogs: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (err) => errors.push(`uncaught: ${err.message}`));
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(`${hub.url}/${query}${hash}`);
  return {
    page,
    errors,
    dialogs,
    unexpected: () => errors.filter((text) => !/Failed to load resource: the server responded with a status of 404/.test(text)),
  };
}

async function waitForMode(page: Page, mode: string): Promise<void> {
  await page.waitForSelector(`#live-status[data-mode="${mode}"]`, { timeout: APPEARS_WITHIN_MS });
}

describe('the web view', needs('chromium'), () => {
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pe-relay-web-'));
    corpus = path.join(dir, 'corpus');
    keys = path.join(dir, 'keys');
    await initStore({ corpus, keys });
    const added = await runCli(['keys', 'add', AGENT, '--keys', keys]);
    assert.equal(added.code, 0, added.stderr);
    key = Buffer.from((await readFile(path.join(keys, `${AGENT}.key`), 'utf8')).trim());
    hub = await startHub();
    browser = await launchChromium(dir);
    await append(record({ kind: 'question', from: 'scout-1', to: 'planner' }, 'Which route is open?'));
  });

  after(async () => {
    await browser?.close();
    if (hub) await hub.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('GET / and /assets/* answer with a strict CSP, nosniff and their content types', async () => {
    const page = await fetch(`${hub.url}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    const csp = page.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'"]) {
      assert.ok(csp.includes(directive), `CSP lacks ${directive}: ${csp}`);
    }
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    const script = await fetch(`${hub.url}/assets/app.js`);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    const style = await fetch(`${hub.url}/assets/style.css`);
    assert.match(style.headers.get('content-type') ?? '', /^text\/css/);
    const missing = await fetch(`${hub.url}/assets/../../package.json`);
    assert.equal(missing.status, 404);
    const unknown = await fetch(`${hub.url}/assets/nothing.js`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: string }).error, 'not_found');
    const post = await fetch(`${hub.url}/`, { method: 'POST', body: 'x' });
    assert.equal(post.status, 405);
  });

  test('the page loads with no CSP violation and no console error, and lists what the hub holds', async () => {
    const { page, errors } = await openPage();
    await waitForMode(page, 'polling');
    await page.waitForSelector('#feed-rows tr[data-id="relay-0001"] td.kind:not(.pending)');
    assert.equal(await page.textContent('#feed-rows tr[data-id="relay-0001"] td.from'), 'scout-1');
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('without a key, a record appended through the API appears within a few seconds, and the page says it is polling', async () => {
    const { page, unexpected } = await openPage();
    await waitForMode(page, 'polling');
    assert.match((await page.textContent('#live-status')) ?? '', /Polling/);
    const id = await append(record({ kind: 'note', from: 'scout-2', to: 'planner' }, 'seen by polling'));
    await page.waitForSelector(`#feed-rows tr[data-id="${id}"] td.kind:text("note")`, { timeout: APPEARS_WITHIN_MS });
    assert.equal(await page.getAttribute('#feed-rows tr:first-child', 'data-id'), id, 'newest first');
    assert.deepEqual(unexpected(), []);
    await page.close();
  });

  test('the claims panel shows who holds what, live: a claim appears with its holder and targets, and goes when released', async () => {
    const { page, unexpected } = await openPage();
    await waitForMode(page, 'polling');
    await page.waitForSelector('#claims .hint:text("none live")');
    await assert.rejects(append(record({ kind: 'claim', from: 'builder-1', claim: 'path:src/<b>x</b>' }, 'x')), /bad_claim/, 'a pattern holding markup is refused');
    const claim = await append(record({ kind: 'claim', from: 'builder-1', claim: 'task:fix-login path:src/auth/**' }, 'on it'));
    const chip = `#claims a.claim[data-claim="${claim}"]`;
    await page.waitForSelector(chip, { timeout: APPEARS_WITHIN_MS });
    assert.equal(await page.getAttribute(chip, 'data-holder'), 'builder-1');
    assert.match((await page.textContent(chip)) ?? '', /builder-1 task:fix-login path:src\/auth\/\*\* until /);
    await append(record({ kind: 'release', from: 'builder-1', parent: claim }, ''));
    await page.waitForSelector(chip, { state: 'detached', timeout: APPEARS_WITHIN_MS });
    assert.deepEqual(unexpected(), []);
    await page.close();
  });

  test('with a key, a record appears through the signed event stream', async () => {
    const { page, unexpected } = await openPage();
    const streams: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/events') streams.push(request.url());
    });
    await waitForMode(page, 'polling');
    await page.fill('#agent', AGENT);
    await page.fill('#key', key.toString());
    await page.click('#key-form button[type="submit"]');
    await waitForMode(page, 'live');
    assert.equal(await page.inputValue('#key'), '', 'the key does not stay in the form');
    const id = await append(record({ kind: 'answer', from: 'planner', to: 'scout-2' }, 'seen by the stream'));
    await page.waitForSelector(`#feed-rows tr[data-id="${id}"] td.kind:text("answer")`, { timeout: 5000 });
    assert.equal(await page.getAttribute('#live-status', 'data-mode'), 'live');
    assert.equal(streams.length, 1);
    const query = new URL(streams[0]!).searchParams;
    assert.equal(query.get('agent'), AGENT);
    assert.match(query.get('sig') ?? '', /^[0-9a-f]{64}$/);
    assert.equal(await page.evaluate('sessionStorage.length'), 0, 'kept in memory only unless asked');
    assert.deepEqual(unexpected(), []);
    await page.close();
  });

  test('a key the hub refuses: the page says which file to paste instead, and keeps polling', async () => {
    const { page } = await openPage();
    await waitForMode(page, 'polling');
    await page.fill('#agent', AGENT);
    await page.fill('#key', 'not-the-key');
    await page.click('#key-form button[type="submit"]');
    await page.waitForSelector('#live-status[data-mode="polling"]:has-text("keys/web-watcher.key")', { timeout: 5000 });
    const status = await page.textContent('#live-status');
    assert.match(status ?? '', /not the one in the hub's keys\/web-watcher\.key\. Paste that file's whole contents/);
    assert.doesNotMatch(status ?? '', /HMAC/, 'a browser user is not told how to sign with curl');
    assert.equal(await page.isVisible('#key'), true, 'the form asks for a key again');
    await page.close();
  });

  test('when the stream drops, the page reopens it with a fresh signature and ?after= the last id seen', async () => {
    const { page } = await openPage();
    const streams: URL[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === '/events') streams.push(url);
    });
    await waitForMode(page, 'polling');
    await page.fill('#agent', AGENT);
    await page.fill('#key', key.toString());
    await page.click('#key-form button[type="submit"]');
    await waitForMode(page, 'live');
    const lastSeen = await page.getAttribute('#feed-rows tr:first-child', 'data-id');

    await hub.stop();
    await waitForMode(page, 'reconnecting');
    hub = await startHub(hub.port);
    await waitForMode(page, 'live');
    const id = await append(record({ kind: 'note', from: 'scout-3' }, 'after the drop'));
    await page.waitForSelector(`#feed-rows tr[data-id="${id}"]`, { timeout: 5000 });

    const reopened = streams.at(-1)!;
    assert.ok(streams.length >= 2);
    assert.equal(reopened.searchParams.get('after'), lastSeen);
    assert.notEqual(reopened.searchParams.get('sig'), streams[0]!.searchParams.get('sig'));
    await page.close();
  });

  test('opening a record shows its exact bytes and a digest that checks out', async () => {
    const id = await append(record({ kind: 'question', from: 'scout-4', to: 'planner' }, 'Line one.\r\nLine two, CRLF above, “quotes” and ünïcödé.'));
    const bytes = await (await fetch(`${hub.url}/relays/${id}`)).text();
    const { page, unexpected } = await openPage(`#${id}`);
    await page.waitForSelector('#record-pane [data-digest="good"]');
    assert.equal(await page.textContent('#record-pane pre.bytes'), bytes);
    assert.match(await page.getAttribute('#record-pane a.share', 'href') ?? '', new RegExp(`^#${id}$`));
    assert.deepEqual(unexpected(), []);
    await page.close();
  });

  test('a record stored with an idempotency key shows the key among its deposit facts, and its digest checks out', async () => {
    const body = Buffer.from(record({ kind: 'note', from: 'scout-5' }, 'sent once'));
    const response = await fetch(`${hub.url}/relays`, {
      method: 'POST',
      headers: { Authorization: authorizationFor('scout-5', await keyOf('scout-5'), 'POST', body), 'Idempotency-Key': 'web-key-1', Accept: 'application/json' },
      body,
    });
    assert.equal(response.status, 201);
    const { id } = (await response.json()) as { id: string };
    const { page, unexpected } = await openPage(`#${id}`);
    await page.waitForSelector('#record-pane [data-digest="good"]');
    const facts = await page.$$eval('#record-pane dl.facts dt', (dts) => dts.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]));
    assert.deepEqual(facts.find(([name]) => name === 'idempotency key'), ['idempotency key', 'web-key-1']);
    assert.match(await page.textContent('#record-pane pre.bytes') ?? '', /\nidempotency-key: web-key-1\n---\n/);
    assert.deepEqual(unexpected(), []);
    await page.close();
  });

  test('a record whose text is markup shows as text and runs nothing', async () => {
    const hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>';
    // A from: no agent could sign: written by an operator's CLI, whose records are checked against no name.
    const appended = await runCli(['append', '--corpus', corpus], { input: record({ kind: '<b>kind</b>', from: '<img src=y onerror=alert(3)>' }, hostile) });
    assert.equal(appended.code, 0, appended.stderr);
    const id = appended.stdout.trim();
    const { page, dialogs, unexpected } = await openPage(`#${id}`);
    await page.waitForSelector('#record-pane [data-digest="good"]');
    await page.waitForSelector(`#feed-rows tr[data-id="${id}"] td.from:not(.pending)`);
    assert.ok((await page.textContent('#record-pane pre.bytes'))!.includes(hostile));
    assert.equal(await page.textContent(`#feed-rows tr[data-id="${id}"] td.from`), '<img src=y onerror=alert(3)>');
    assert.equal(await page.locator('img').count(), 0, 'no element was made from the record');
    assert.equal(await page.locator('b').count(), 0);
    assert.equal(await page.locator('script').count(), 1, 'only the page\'s own script');
    assert.deepEqual(dialogs, []);
    assert.deepEqual(unexpected(), []);
    await page.close();
  });

  test('a missing parent shows as missing, not as a link, and its own view says KNOWN_MISSING', async () => {
    const parentId = await append(record({ kind: 'question' }, 'held parent'));
    const id = await append(record({ kind: 'reply', parent: 'relay-0900', ref: `${parentId}` }, 'my parent is lost'));
    const { page, unexpected } = await openPage(`#${id}`);
    await page.waitForSelector('#record-pane [data-ref="relay-0900"][data-state]');
    assert.equal(await page.getAttribute('#record-pane [data-ref="relay-0900"]', 'data-state'), 'KNOWN_MISSING');
    assert.equal(await page.locator('#record-pane a[data-ref="relay-0900"]').count(), 0, 'a missing id is not a link');
    assert.match((await page.textContent('#record-pane [data-ref="relay-0900"]')) ?? '', /missing/);
    await page.waitForSelector(`#record-pane a[data-ref="${parentId}"][data-state="PRESENT"]`);

    await page.click('#missing a[href="#relay-0900"]');
    await page.waitForSelector('#record-pane .verdict[data-state="KNOWN_MISSING"]');
    await page.waitForSelector(`#record-pane ul.replies a[href="#${id}"]`);
    assert.deepEqual(unexpected(), []);
    await page.close();
  });

  test('replies open one level at a time', async () => {
    const root = await append(record({ kind: 'question' }, 'root'));
    const child = await append(record({ kind: 'reply', parent: root }, 'child'));
    const grandchild = await append(record({ kind: 'reply', parent: child }, 'grandchild'));
    const { page } = await openPage(`#${root}`);
    await page.waitForSelector(`#record-pane ul.replies li[data-id="${child}"]`);
    assert.equal(await page.locator(`#record-pane li[data-id="${grandchild}"]`).count(), 0);
    await page.click(`#record-pane li[data-id="${child}"] > button.expand`);
    await page.waitForSelector(`#record-pane li[data-id="${child}"] ul.replies li[data-id="${grandchild}"]`);
    await page.close();
  });

  test('filters by from, to and kind keep only matching rows, and the address carries them', async () => {
    const mine = await append(record({ kind: 'status', from: 'filter-me', to: 'ops' }, 'a'));
    await append(record({ kind: 'status', from: 'someone-else', to: 'ops' }, 'b'));
    const { page } = await openPage();
    await page.waitForSelector(`#feed-rows tr[data-id="${mine}"] td.from:not(.pending)`);
    await page.fill('#filter-from', 'FILTER-me');
    await page.fill('#filter-kind', 'stat');
    const visible = await page.locator('#feed-rows tr:visible').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-id')));
    assert.deepEqual(visible, [mine]);
    assert.match(page.url(), /\?from=FILTER-me&kind=stat/);
    await page.fill('#filter-to', 'nobody');
    await page.waitForSelector('#no-match:visible');
    await page.close();
  });

  test('the search box shows only the records the hub finds holding every word, and says why it refuses a search', async () => {
    const found = await append(record({ kind: 'status' }, 'the websearch needle is here'));
    const other = await append(record({ kind: 'status' }, 'a websearch haystack'));
    const { page } = await openPage();
    await page.waitForSelector(`#feed-rows tr[data-id="${other}"]`);
    await page.fill('#filter-text', 'NEEDLE websearch');
    await page.waitForSelector(`#feed-rows tr[data-id="${found}"]`, { state: 'visible' }); // once the hub has answered
    await page.waitForSelector(`#feed-rows tr[data-id="${other}"]`, { state: 'hidden' });
    const visible = await page.locator('#feed-rows tr:visible').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-id')));
    assert.deepEqual(visible, [found]);
    assert.match(page.url(), /\?text=NEEDLE\+websearch/);
    await page.fill('#filter-text', '***');
    await page.waitForSelector('#count:has-text("holds no word")');
    await page.close();
  });

  test('the page\'s own SHA-256 and HMAC (for browsers without WebCrypto) agree with WebCrypto', async () => {
    const { page } = await openPage();
    const mismatches = await page.evaluate(async (moduleUrl) => {
      const fallback = await import(moduleUrl);
      const bad: number[] = [];
      for (let n = 0; n < 200; n += 7) {
        const bytes = crypto.getRandomValues(new Uint8Array(n * 5));
        const web = fallback.toHex(await crypto.subtle.digest('SHA-256', bytes));
        const keyBytes = crypto.getRandomValues(new Uint8Array(n));
        const cryptoKey = await crypto.subtle.importKey('raw', keyBytes.length ? keyBytes : new Uint8Array(1), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
        const webMac = fallback.toHex(await crypto.subtle.sign('HMAC', cryptoKey, bytes));
        const ownMac = fallback.toHex(fallback.hmac(keyBytes.length ? keyBytes : new Uint8Array(1), bytes));
        if (web !== fallback.toHex(fallback.sha256(bytes)) || webMac !== ownMac) bad.push(n);
      }
      return bad;
    }, '/assets/sha256.js');
    assert.deepEqual(mismatches, []);
    await page.close();
  });

  // Last: the checkpoint it writes is a record every later test's feed would show.
  test('the page shows the verified frontier: how far the hub\'s checkpoints prove the corpus complete', async () => {
    const { page, unexpected } = await openPage();
    await page.waitForSelector('#frontier[data-state="none"]', { timeout: APPEARS_WITHIN_MS });
    const written = await runCli(['checkpoint', '--corpus', corpus, '--keys', keys]);
    assert.equal(written.code, 0, written.stderr);
    const id = written.stdout.trim();
    await page.waitForSelector('#frontier[data-state="verified"]', { timeout: APPEARS_WITHIN_MS });
    const covered = /^covers: \S+ (\S+)$/m.exec(await readFile(path.join(corpus, id), 'utf8'))![1];
    assert.equal(await page.textContent('#frontier'), `Verified complete up to ${covered} (checkpoint ${id})`);
    assert.deepEqual(unexpected(), []);
    await page.close();
  });
});
