/**
 * `p-e-relay bridge`: a real SDK client over stdio → a real bridge process →
 * real HTTP on loopback → a real hub process (`serve --http`), and the MCP
 * Inspector's CLI as an outside client.
 *
 * Everything runs concurrently (one describe with { concurrency: true }),
 * so the wait that must outlive a client's 60 s timeout sets the file's
 * wall time instead of adding to it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { hubRefusal, hubUnreachable } from '../../lib/bridge/hub-answers.js';
import { parseHubUrl } from '../../lib/bridge/hub-url.js';
import { openStore } from '../../lib/store/store.js';
import { ROOT, BIN, errorCode, record, tempDir, textOf } from '../support/helpers.js';
import { activeWaits, bridgeClient, closedPort, hubStore, startHubProcess, type BridgeClient, type Cleanup, type HubProcess } from '../support/bridge-helpers.js';
import { eventually } from '../support/poll.js';

const AGENT = 'scout-7';
const BODY_CAP = 4096;
const TOOLS = ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay'];

function structured<T = Record<string, unknown>>(result: unknown): T {
  return (result as CallToolResult).structuredContent as T;
}

function meta(result: unknown): Record<string, unknown> {
  return ((result as CallToolResult)._meta?.['p-e-relay/error'] ?? {}) as Record<string, unknown>;
}

/** Cleanups for a suite's shared fixture, run in reverse order of registration. */
function suiteCleanup(): Cleanup & { run(): Promise<void> } {
  const fns: (() => unknown)[] = [];
  return {
    after: (fn) => void fns.unshift(fn),
    run: async () => {
      for (const fn of fns) await fn();
    },
  };
}

/**
 * The hub most tests share, its corpus seeded before it starts (so the ids
 * are known whatever runs first): relay-0001, and relay-0002 answering it
 * and citing relay-0009, which nobody holds.
 */
async function startSharedHub(cleanup: Cleanup): Promise<HubProcess> {
  const store = await hubStore(cleanup);
  const seeding = await openStore({ corpus: store.corpus });
  await seeding.append(Buffer.from(record({ kind: 'question', from: AGENT, to: 'anyone' }, 'who is there?')), { depositedBy: 'cli/seed' });
  await seeding.append(Buffer.from(record({ kind: 'reply', from: AGENT, parent: 'relay-0001', ref: 'relay-0009' }, 'me')), { depositedBy: 'cli/seed' });
  await seeding.close();
  return startHubProcess(cleanup, { store, args: ['--body-cap', String(BODY_CAP)] });
}

/** The long-wait block of docs/bridge.md as a function of the client and the console it logs to. */
async function longWaitRecipe(): Promise<(client: Client, console: { error: (...args: unknown[]) => void }) => Promise<CallToolResult>> {
  const doc = await readFile(path.join(ROOT, 'docs', 'bridge.md'), 'utf8');
  const block = /```ts\n(const result = await client\.callTool\([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(block, 'docs/bridge.md has the long-wait block');
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<CallToolResult>;
  return new AsyncFunction('client', 'console', `${block}\nreturn result;`);
}

describe('bridge', { concurrency: true }, () => {
  // One hub serves every test that cannot disturb another (fewer processes
  // starting at once on two cores); tests that need a hub of their own
  // (its own limits, width, life or wait gauge) start one.
  const cleanup = suiteCleanup();
  let shared: Promise<HubProcess> | null = null;
  const sharedHub = () => (shared ??= startSharedHub(cleanup));
  after(() => cleanup.run());

  // First, so its processes start before the rest crowd the machine.
  test('docs/bridge.md\'s long-wait recipe, run as written, outlives the client\'s 60 s timeout and returns a record appended at ~62 s', async (t) => {
    const hub = await startHubProcess(t, { agents: [AGENT, 'peer'] });
    const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
    // The late record is a peer's, to the agent: a named wait leaves out the agent's own records (spec §8d).
    const peer = (await bridgeClient(t, hub.url, 'peer', hub.keys)).client;
    const progress: number[] = [];
    const started = Date.now();
    // The doc's block, with the SDK's default request timeout (60 s) reset by each progress notification; its console.error lines are counted.
    const recipe = await longWaitRecipe();
    const waiting = recipe(client, { error: (...args: unknown[]) => progress.push(args.at(-1) as number) });
    // Counted from when the hub holds the wait, so a slow start cannot shorten it.
    await eventually(async () => (await activeWaits(hub.url)) === 1, 'the wait to reach the hub', { timeoutMs: 20_000, everyMs: 50 });
    let appended: Promise<unknown> = Promise.resolve();
    const timer = setTimeout(() => {
      appended = peer.callTool({ name: 'append_relay', arguments: { bytes: record({ from: 'peer', to: AGENT }, 'sixty-two seconds in') } });
    }, 62_000);
    t.after(() => clearTimeout(timer));
    const result = await waiting;
    assert.equal(result.isError, undefined, textOf(result));
    const { appeared, timedOut, waitedMs } = structured<{ appeared: { id: string; from: string }[]; timedOut: boolean; waitedMs: number }>(result);
    assert.deepEqual(appeared.map((a) => [a.id, a.from]), [['relay-0001', 'peer']]);
    assert.equal(timedOut, false);
    assert.ok(waitedMs > 61_000, `the hub waited ${waitedMs} ms`);
    assert.ok(Date.now() - started > 62_000, 'the client held the call past its 60 s timeout');
    assert.ok(progress.length >= 5, `${progress.length} progress notifications`);
    assert.ok(progress.every((p, i) => i === 0 || p > progress[i - 1]!), 'progress only grows');
    assert.equal((await appended as CallToolResult).isError, undefined);
  });

  describe('every tool, forwarded to the hub', { concurrency: true }, () => {
    let hub: HubProcess;
    let bridge: BridgeClient;
    before(async () => {
      hub = await sharedHub();
      bridge = await bridgeClient(cleanup, hub.url, AGENT, hub.keys);
    });

    test('tools/list answers the hub\'s own six tools: names, schemas, descriptions, annotations', async (t) => {
      const direct = new Client({ name: 'direct', version: '0' });
      await direct.connect(new StreamableHTTPClientTransport(new URL('/mcp', hub.url)));
      t.after(() => direct.close());
      const viaBridge = await bridge.client.listTools();
      assert.deepEqual(viaBridge.tools.map((tool) => tool.name).sort(), TOOLS);
      assert.deepEqual(viaBridge.tools, (await direct.listTools()).tools);
    });

    test('append_relay is signed with the agent\'s key and lands as mcp/<agent>', async () => {
      const result = await bridge.client.callTool({ name: 'append_relay', arguments: { bytes: record({ from: AGENT }, 'signed by the bridge') } });
      const { id, depositedBy } = structured<{ id: string; depositedBy: string }>(result);
      assert.equal(depositedBy, `mcp/${AGENT}`);
      assert.match(await readFile(path.join(hub.corpus, id), 'utf8'), new RegExp(`^provenance: as-received\ndeposited-by: mcp/${AGENT}\n`));
    });

    test('exists answers the hub\'s state for an id, unsigned', async () => {
      for (const [id, state] of [['relay-0001', 'PRESENT'], ['relay-0009', 'KNOWN_MISSING'], ['relay-0500', 'UNKNOWN']]) {
        const result = await bridge.client.callTool({ name: 'exists', arguments: { id } });
        assert.equal(textOf(result), `${id} ${state}`);
        assert.deepEqual(structured(result), { id, state });
      }
    });

    test('get_relay answers the record file\'s exact bytes', async () => {
      const result = await bridge.client.callTool({ name: 'get_relay', arguments: { id: 'relay-0001' } });
      assert.equal(textOf(result), await readFile(path.join(hub.corpus, 'relay-0001'), 'utf8'));
    });

    test('list_relays answers both lists, as text and structured', async () => {
      const result = await bridge.client.callTool({ name: 'list_relays', arguments: {} });
      const { present, knownMissing } = structured<{ present: string[]; knownMissing: string[] }>(result);
      assert.deepEqual(present.slice(0, 2), ['relay-0001', 'relay-0002']);
      assert.deepEqual(knownMissing, ['relay-0009']);
      assert.equal(textOf(result), `present (${present.length}): ${present.join(' ')}\nknown missing (1): relay-0009`);
    });

    test('list_replies answers the records that name an id', async () => {
      const result = await bridge.client.callTool({ name: 'list_replies', arguments: { id: 'relay-0001' } });
      const { parent, replies } = structured<{ parent: string; replies: { depositedAt: string }[] }>(result);
      assert.equal(parent, 'relay-0001');
      assert.deepEqual(replies.map(({ depositedAt, ...rest }) => rest), [{ id: 'relay-0002', kind: 'reply', from: AGENT, parent: 'relay-0001', refs: ['relay-0009'], depositedBy: 'cli/seed', provenance: 'as-received' }]);
    });

    test('wait_for_relay is signed and answers what is held after the mark', async () => {
      const result = await bridge.client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0000', timeout_ms: 5000 } });
      const { appeared, timedOut } = structured<{ appeared: { id: string; kind: string }[]; timedOut: boolean }>(result);
      assert.equal(timedOut, false);
      assert.deepEqual(appeared.slice(0, 2).map((a) => [a.id, a.kind]), [['relay-0001', 'question'], ['relay-0002', 'reply']]);
    });

    test('identical calls sent at once each carry a fresh signature, which the hub accepts once', async () => {
      const call = () => bridge.client.callTool({ name: 'wait_for_relay', arguments: { after: 'relay-0001', timeout_ms: 5000 } });
      const results = await Promise.all([call(), call(), call()]);
      assert.deepEqual(results.map((r) => errorCode(r) ?? 'answered'), ['answered', 'answered', 'answered']);
    });

    test('a refusal the hub gives as a tool result comes through with its code', async () => {
      const result = await bridge.client.callTool({ name: 'append_relay', arguments: { id: 'relay-0001', bytes: record({}, 'not the same bytes') } });
      assert.equal(result.isError, true);
      assert.equal(errorCode(result), 'id_held');
      assert.equal(meta(result).identical, false);
    });

    test('arguments the hub\'s schema refuses are refused as the hub refuses them, with its code', async () => {
      const result = await bridge.client.callTool({ name: 'exists', arguments: { id: 42 } });
      assert.equal(result.isError, true);
      assert.equal(errorCode(result), 'invalid_arguments', 'the hub names what was wrong with a stable code (2026-07-28 makes schema failures tool results)');
    });
  });

  test('a client cancel ends the wait on the hub', async (t) => {
    const hub = await startHubProcess(t);
    const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
    const cancel = new AbortController();
    const waiting = client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 60_000 } }, { signal: cancel.signal }).catch((err: Error) => err);
    await eventually(async () => (await activeWaits(hub.url)) === 1, 'the wait to reach the hub', { timeoutMs: 10_000, everyMs: 50 });
    cancel.abort();
    assert.ok((await waiting) instanceof Error);
    await eventually(async () => (await activeWaits(hub.url)) === 0, 'the hub to end the wait', { timeoutMs: 5_000, everyMs: 50 });
  });

  test('the hub going away mid-wait is refused at once as hub_unreachable, not at the timeout', async (t) => {
    const hub = await startHubProcess(t);
    const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
    const started = Date.now();
    const waiting = client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 60_000 } }, { onprogress: () => {} });
    await eventually(async () => (await activeWaits(hub.url)) === 1, 'the wait to reach the hub', { timeoutMs: 10_000, everyMs: 50 });
    hub.child.kill('SIGKILL');
    const result = await waiting;
    assert.equal(errorCode(result), 'hub_unreachable');
    assert.ok(Date.now() - started < 20_000);
  });

  test('hub down: the tools are still listed, and every call is refused as hub_unreachable naming the hub', async (t) => {
    const { keys } = await hubStore(t);
    const url = `http://127.0.0.1:${await closedPort()}`;
    const { client } = await bridgeClient(t, url, AGENT, keys);
    assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), TOOLS);
    for (const [name, args] of [['list_relays', {}], ['append_relay', { bytes: record() }]] as const) {
      const result = await client.callTool({ name, arguments: args });
      assert.equal(result.isError, true);
      assert.equal(errorCode(result), 'hub_unreachable');
      assert.equal(meta(result).cause, 'ECONNREFUSED');
      assert.ok(textOf(result).includes(url), textOf(result));
    }
  });

  test('hub down: the built-in list is the one every server lists, with nothing left undefined', async (t) => {
    const { keys } = await hubStore(t);
    const { client } = await bridgeClient(t, `http://127.0.0.1:${await closedPort()}`, AGENT, keys);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), TOOLS);
    for (const tool of tools) assert.doesNotMatch(JSON.stringify(tool), /undefined/, tool.name);
  });

  test('when the hub comes up, calls go through and the client is told to fetch the hub\'s own tool list', async (t) => {
    let hub: HubProcess | undefined;
    t.after(() => hub?.stop()); // registered first: after() hooks run in order, and the store goes next
    const store = await hubStore(t, { idWidth: 6 });
    const port = await closedPort();
    const { client } = await bridgeClient(t, `http://127.0.0.1:${port}`, AGENT, store.keys);
    const listed = (await client.listTools()).tools;
    const changed = new Promise<void>((resolve) => client.setNotificationHandler('notifications/tools/list_changed', () => resolve()));
    hub = await startHubProcess(t, { store, port });
    const result = await client.callTool({ name: 'exists', arguments: { id: 'relay-000033' } });
    assert.equal(textOf(result), 'relay-000033 UNKNOWN');
    await changed;
    const relisted = (await client.listTools()).tools;
    // Every id parameter shows the width by example.
    const of = (tools: typeof listed, name: string) => JSON.stringify(tools.find((tool) => tool.name === name)!);
    assert.match(of(listed, 'exists'), /e\.g\. relay-0033"/);
    assert.match(of(relisted, 'exists'), /e\.g\. relay-000033"/);
    assert.match(of(relisted, 'append_relay'), /e\.g\. relay-000033"/);
  });

  test('a hub with wider ids: the bridge\'s tools state the hub\'s width', async (t) => {
    const hub = await startHubProcess(t, { idWidth: 6 });
    const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
    const tools = (await client.listTools()).tools;
    for (const tool of tools) assert.doesNotMatch(JSON.stringify(tool), /relay-\d{4}\b/, tool.name);
    assert.match(JSON.stringify(tools.find((tool) => tool.name === 'append_relay')), /e\.g\. relay-000033/);
    assert.match(JSON.stringify(tools.find((tool) => tool.name === 'get_relay')), /e\.g\. relay-000033/);
  });

  test('no key file: appends and waits are refused as key_unusable naming the file; reads still work', async (t) => {
    const hub = await sharedHub();
    const { keys } = await hubStore(t, { agents: ['someone-else'] });
    const { client } = await bridgeClient(t, hub.url, AGENT, keys);
    for (const [name, args] of [['append_relay', { bytes: record() }], ['wait_for_relay', { timeout_ms: 10 }]] as const) {
      const result = await client.callTool({ name, arguments: args });
      assert.equal(errorCode(result), 'key_unusable');
      assert.ok(textOf(result).includes(path.join(keys, `${AGENT}.key`)), textOf(result));
    }
    assert.equal(textOf(await client.callTool({ name: 'exists', arguments: { id: 'relay-0999' } })), 'relay-0999 UNKNOWN');
  });

  test('an empty key file is refused as key_unusable, never used as an empty HMAC key', async (t) => {
    const hub = await sharedHub();
    const { keys } = await hubStore(t);
    await writeFile(path.join(keys, `${AGENT}.key`), '\n');
    const { client } = await bridgeClient(t, hub.url, AGENT, keys);
    const result = await client.callTool({ name: 'append_relay', arguments: { bytes: record() } });
    assert.equal(errorCode(result), 'key_unusable');
    assert.equal(meta(result).cause, 'empty');
  });

  test('a key that is not the hub\'s is refused as bad_signature, saying which file to replace', async (t) => {
    const hub = await sharedHub();
    const store = await hubStore(t); // its scout-7.key is a different random key
    const { client } = await bridgeClient(t, hub.url, AGENT, store.keys);
    const result = await client.callTool({ name: 'append_relay', arguments: { bytes: record() } });
    assert.equal(errorCode(result), 'bad_signature');
    assert.equal(meta(result).status, 401);
    assert.ok(textOf(result).includes(path.join(store.keys, `${AGENT}.key`)), textOf(result));
  });

  test('an agent the hub holds no key for is refused as unknown_agent', async (t) => {
    const hub = await sharedHub();
    const store = await hubStore(t, { agents: ['stranger'] });
    const { client } = await bridgeClient(t, hub.url, 'stranger', store.keys);
    const result = await client.callTool({ name: 'wait_for_relay', arguments: { timeout_ms: 10 } });
    assert.equal(errorCode(result), 'unknown_agent');
  });

  test('a record over the hub\'s body cap is refused as too_large (413)', async (t) => {
    const hub = await sharedHub();
    const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
    const result = await client.callTool({ name: 'append_relay', arguments: { bytes: record({}, 'x'.repeat(BODY_CAP)) } });
    assert.equal(errorCode(result), 'too_large');
    assert.equal(meta(result).status, 413);
  });

  test('appending faster than the hub allows is refused as rate_limited with the time to retry', async (t) => {
    const hub = await startHubProcess(t, { args: ['--append-rate', '1'] });
    const { client } = await bridgeClient(t, hub.url, AGENT, hub.keys);
    // A burst of 2, then 1 a second: of 6 sent at once, some must be refused.
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => client.callTool({ name: 'append_relay', arguments: { bytes: record({}, `burst ${i}`) } })));
    const refused = results.find((r) => r.isError);
    assert.ok(refused, 'one of the burst is refused');
    assert.equal(errorCode(refused), 'rate_limited');
    assert.equal(typeof meta(refused).retryAfterS, 'number');
    assert.match(textOf(refused), /retry in \d+ s/);
  });

  describe('the MCP Inspector CLI as an outside client', { concurrency: true }, () => {
    const INSPECTOR = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build', 'cli.js');

    /**
     * Runs the Inspector's CLI mode. Its cwd must be a directory whose parent
     * holds a package.json: inspector-cli 1.0.3 checks "../package.json"
     * against the working directory but imports it relative to its own file.
     */
    function inspector(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [INSPECTOR, '--cli', ...args], { cwd: path.join(ROOT, 'test'), env: { ...process.env, P_E_RELAY_LOG: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    }

    test('lists the six tools through the bridge', async () => {
      const hub = await sharedHub();
      const out = await inspector([process.execPath, BIN, 'bridge', '--url', hub.url, '--agent', AGENT, '--keys', hub.keys, '--method', 'tools/list']);
      assert.equal(out.code, 0, out.stderr);
      assert.deepEqual((JSON.parse(out.stdout) as { tools: { name: string }[] }).tools.map((tool) => tool.name).sort(), TOOLS);
    });

    test('calls append_relay through the bridge, from a client config file like docs/hosts.md\'s', async (t) => {
      const hub = await sharedHub();
      const config = path.join(await tempDir(t), 'mcp.json');
      await writeFile(config, JSON.stringify({ mcpServers: { 'p-e-relay': { command: BIN, args: ['bridge', '--url', hub.url, '--agent', AGENT, '--keys', hub.keys] } } }));
      const bytes = record({ from: AGENT }, 'hello through the bridge');
      const out = await inspector(['--config', config, '--server', 'p-e-relay', '--method', 'tools/call', '--tool-name', 'append_relay', '--tool-arg', `bytes=${bytes}`]);
      assert.equal(out.code, 0, out.stderr);
      const { id, depositedBy } = (JSON.parse(out.stdout) as { structuredContent: { id: string; depositedBy: string } }).structuredContent;
      assert.equal(depositedBy, `mcp/${AGENT}`);
      assert.equal((await readFile(path.join(hub.corpus, id), 'utf8')).split('---\n')[1], bytes);
    });
  });

  describe('what the hub\'s answers become', () => {
    const side = { url: 'http://hub.test:7077', agent: AGENT, keyFile: '/keys/scout-7.key' };

    test('a stale timestamp says to fix the clock', () => {
      const e = hubRefusal(401, JSON.stringify({ error: 'stale_timestamp', message: 'hub words', reason: 'stale_timestamp', serverTime: 1 }), null, side);
      assert.equal(e.code, 'stale_timestamp');
      assert.equal(e.details.serverTime, 1);
      assert.match(e.message, /clock/);
    });

    test('a 429 without retryAfterS in its body takes it from Retry-After', () => {
      const e = hubRefusal(429, JSON.stringify({ error: 'rate_limited', message: 'slow down; retry in 3 s.' }), '3', side);
      assert.equal(e.code, 'rate_limited');
      assert.equal(e.details.retryAfterS, 3);
    });

    test('an answer that is not the hub\'s (a proxy\'s HTML page) is hub_error with the status', () => {
      const e = hubRefusal(502, '<html>Bad Gateway</html>', null, side);
      assert.equal(e.code, 'hub_error');
      assert.equal(e.details.status, 502);
    });

    test('a code this version does not know is hub_error keeping the hub\'s code', () => {
      const e = hubRefusal(418, JSON.stringify({ error: 'teapot', message: 'I am a teapot.' }), null, side);
      assert.equal(e.code, 'hub_error');
      assert.equal(e.details.hubCode, 'teapot');
    });

    test('a refused connection says nothing was sent; a reset says the outcome is unknown', () => {
      const refused = hubUnreachable(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }), side);
      const reset = hubUnreachable(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } }), side);
      assert.deepEqual([refused.code, refused.details.cause, reset.details.cause], ['hub_unreachable', 'ECONNREFUSED', 'ECONNRESET']);
      assert.match(refused.message, /nothing was sent/);
      assert.match(reset.message, /outcome is unknown/);
    });

    test('--url takes the hub\'s base or its /mcp endpoint, and keeps a path prefix', () => {
      assert.equal(parseHubUrl('http://127.0.0.1:7077')?.mcp.href, 'http://127.0.0.1:7077/mcp');
      assert.equal(parseHubUrl('http://127.0.0.1:7077/mcp')?.mcp.href, 'http://127.0.0.1:7077/mcp');
      assert.equal(parseHubUrl('https://example.org/relay/')?.mcp.href, 'https://example.org/relay/mcp');
      assert.equal(parseHubUrl('https://example.org/relay/')?.base, 'https://example.org/relay');
      assert.equal(parseHubUrl('ftp://example.org'), null);
      assert.equal(parseHubUrl('127.0.0.1:7077'), null);
    });
  });
});
