/**
 * docs/hosts.md, followed as written: every fenced block it marks with
 * `host=… door=…` is run as far as it goes without a model, with only the
 * placeholder paths swapped for a temp store (door=serve) or a real hub
 * process and its key (door=bridge), and what it did is checked in the
 * corpus it wrote to.
 *
 * - The `mcpServers` JSON: its command and args, spawned by the SDK client
 *   over stdio as a host does (initialize, tools/list, tools/call).
 * - The Inspector CLI lines: run by bash exactly as written (the dev
 *   dependency, from docs/), printing tools/list and a tools/call.
 * - The Python SDK snippets: run by Python with the SDK installed.
 * - Claude Code, Gemini CLI and Codex: when the host's CLI is on PATH, its
 *   `mcp add` line is run for real in a temp home, and so is its own check
 *   where it has one (`claude mcp list`, `gemini mcp list` before and after
 *   trusting the folder, beside the same line with `init` skipped, whose
 *   failure they show as hosts.md says; `codex mcp get` prints what it
 *   stored). Either way,
 *   the command and args the line hands the host are spawned as the host
 *   would spawn them; a diagnostic says when the CLI itself was not there.
 * - The troubleshooting lines: run by sh, healthy and with `init` skipped.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { closedPort, startHubProcess } from '../support/bridge-helpers.js';
import { ROOT, runProcess, tempDir, textOf } from '../support/helpers.js';
import { PYTHON, pythonSdk } from '../support/python-sdk.js';

const run = promisify(execFile);
const TOOLS = ['append_relay', 'exists', 'get_relay', 'list_relays', 'list_replies', 'wait_for_relay'];
const HOSTS = ['claude-code', 'mcp-servers', 'gemini', 'codex', 'inspector', 'python-sdk'] as const;
const DOORS = ['serve', 'bridge'] as const;
type Door = (typeof DOORS)[number];

interface Block {
  lang: string;
  host: string;
  door: string | undefined;
  text: string;
}

/** Every fenced block whose info string carries `host=…`, in page order. */
async function blocks(): Promise<Block[]> {
  const page = await readFile(path.join(ROOT, 'docs', 'hosts.md'), 'utf8');
  const found: Block[] = [];
  for (const m of page.matchAll(/^```(\w+)((?: [\w-]+=[\w-]+)+)\n([\s\S]*?)^```$/gm)) {
    const attrs = Object.fromEntries([...m[2]!.trim().split(' ')].map((kv) => kv.split('=') as [string, string]));
    assert.ok(attrs.host, `a marked block names its host: ${m[0]}`);
    found.push({ lang: m[1]!, host: attrs.host, door: attrs.door, text: m[3]! });
  }
  return found;
}

async function blocksOf(host: string, door?: Door): Promise<Block[]> {
  const mine = (await blocks()).filter((b) => b.host === host && (door === undefined || b.door === door));
  assert.ok(mine.length > 0, `docs/hosts.md has a ${host} block${door ? ` for ${door}` : ''}`);
  return mine;
}

async function oneLine(host: string, door?: Door): Promise<string> {
  const [block] = await blocksOf(host, door);
  const lines = block!.text.trim().split('\n');
  assert.equal(lines.length, 1, `the ${host} ${door ?? ''} block is one line`);
  return lines[0]!;
}

/** Where each placeholder of the page points in this run, and what the door wrote to. */
interface Place {
  swap(text: string): string;
  /** The corpus the records land in: the shared one (serve) or the hub's (bridge). */
  corpus: string;
}

/** The shared corpus, made by the page's own `init` line. */
async function shared(t: TestContext): Promise<Place> {
  const dir = await tempDir(t);
  const swap = (text: string) => text.replaceAll('/path/to/shared', dir).replaceAll('/path/to/p-e-relay', ROOT);
  const made = await runProcess(['sh', '-c', swap(await oneLine('setup'))]);
  assert.equal(made.code, 0, made.stderr);
  assert.deepEqual((await readdir(dir)).sort(), ['corpus', 'keys'], 'the store, and its keys beside it');
  return { swap, corpus: path.join(dir, 'corpus') };
}

/** A real hub process holding a key for scout-7, which the page's /path/to/keys names. */
async function hub(t: TestContext): Promise<Place> {
  const h = await startHubProcess(t, { agents: ['scout-7'] });
  const swap = (text: string) => text.replaceAll('http://hub.example:7077', h.url).replaceAll('/path/to/keys', h.keys).replaceAll('/path/to/p-e-relay', ROOT);
  return { swap, corpus: h.corpus };
}

const place = (t: TestContext, door: Door): Promise<Place> => (door === 'serve' ? shared(t) : hub(t));

async function records(corpus: string): Promise<string[]> {
  return (await readdir(corpus)).filter((f) => f.startsWith('relay-')).sort();
}

/** What a host does with a server's command and args: spawn it, initialize, list the tools, append. */
async function actAsHost(t: TestContext, command: string, args: string[], corpus: string): Promise<void> {
  const client = new Client({ name: 'hosts-doc', version: '0' });
  await client.connect(new StdioClientTransport({ command, args, env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' } }));
  t.after(() => client.close());
  assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), TOOLS);
  const before = await records(corpus);
  const appended = await client.callTool({ name: 'append_relay', arguments: { bytes: '@p-e/x0\nfrom: scout-7\n\nhello\n' } });
  assert.match(textOf(appended), /^stored relay-\d+\b/, textOf(appended));
  assert.equal((await records(corpus)).length, before.length + 1, 'the record landed in the corpus');
}

/** A line of plain words (no quoting), split as a shell splits it. */
function words(line: string): string[] {
  assert.doesNotMatch(line, /['"\\$`<>|&;]/, `plain words, so splitting on spaces is what a shell does: ${line}`);
  return line.split(/ +/);
}

/** The command and args after the first `--` of `HOST mcp add … NAME -- COMMAND ARGS…`. */
function afterDashes(argv: string[]): { name: string; command: string; args: string[] } {
  const at = argv.indexOf('--');
  assert.ok(at > 3, `the line has \`NAME -- COMMAND\`: ${argv.join(' ')}`);
  return { name: argv[at - 1]!, command: argv[at + 1]!, args: argv.slice(at + 2) };
}

/** `gemini mcp add NAME COMMAND [--] ARGS…`: yargs appends what follows `--` to the args. */
function geminiServer(argv: string[]): { name: string; command: string; args: string[] } {
  assert.deepEqual(argv.slice(0, 3), ['gemini', 'mcp', 'add']);
  assert.doesNotMatch(argv[3]!, /^-/, 'no options before the name (this test does not parse them)');
  const rest = argv.slice(5);
  const dashes = rest.indexOf('--');
  if (dashes >= 0) rest.splice(dashes, 1);
  return { name: argv[3]!, command: argv[4]!, args: rest };
}

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return path.join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return null;
}

/** A temp home and project folder for a host CLI, so the user's own config is never touched. */
async function hostHome(t: TestContext): Promise<{ home: string; project: string; env: NodeJS.ProcessEnv }> {
  const dir = await tempDir(t, 'pe-host-');
  const home = path.join(dir, 'home');
  const project = path.join(dir, 'project');
  await mkdir(home);
  await mkdir(project);
  return { home, project, env: { ...process.env, HOME: home, CODEX_HOME: home, P_E_RELAY_LOG: 'warn' } };
}

test('docs/hosts.md gives every host a marked block for both doors, and names no host this test does not run', async () => {
  const all = await blocks();
  for (const host of HOSTS) {
    for (const door of DOORS) assert.ok(all.some((b) => b.host === host && b.door === door), `${host} has a ${door} block`);
  }
  for (const b of all) assert.ok([...HOSTS, 'setup', 'troubleshoot'].includes(b.host), `a block for ${b.host} is run by this test`);
});

for (const door of DOORS) {
  describe(`the ${door} door`, () => {
    test('the mcpServers config: its command and args serve a real SDK client over stdio', async (t) => {
      const where = await place(t, door);
      const [block] = await blocksOf('mcp-servers', door);
      const config = JSON.parse(where.swap(block!.text)) as { mcpServers: { relay: { command: string; args: string[] } } };
      const { command, args } = config.mcpServers.relay;
      await actAsHost(t, command, args, where.corpus);
    });

    test('Claude Code: `claude mcp add` hands Claude the command after `--`, which serves', async (t) => {
      const where = await place(t, door);
      const argv = words(where.swap(await oneLine('claude-code', door)));
      const server = afterDashes(argv);
      assert.deepEqual(argv.slice(0, 3), ['claude', 'mcp', 'add']);
      assert.equal(server.name, 'relay');
      if (onPath('claude')) {
        const { project, env } = await hostHome(t);
        await run(argv[0]!, argv.slice(1), { cwd: project, env });
        if (door === 'serve') await run(argv[0]!, argv.slice(1).map((w) => w.replace(/^relay$/, 'no-init').replace(/\/corpus$/, '/never-made')), { cwd: project, env });
        const { stdout } = await run('claude', ['mcp', 'list'], { cwd: project, env, timeout: 120_000 });
        assert.match(stdout, /^relay: .* Connected$/m, stdout);
        if (door === 'serve') assert.match(stdout, /^no-init: .* ✘ Failed to connect$/m, 'what hosts.md quotes for a skipped init');
      } else {
        t.diagnostic('claude is not on PATH: `claude mcp add` and `claude mcp list` were not run, only the command after `--`');
      }
      await actAsHost(t, server.command, server.args, where.corpus);
    });

    test('Gemini CLI: `gemini mcp add` stores the command and args, which serve once the folder is trusted', async (t) => {
      const where = await place(t, door);
      const argv = words(where.swap(await oneLine('gemini', door)));
      const server = geminiServer(argv);
      assert.equal(server.name, 'relay');
      const gemini = onPath('gemini');
      if (gemini) {
        const { home, project, env } = await hostHome(t);
        await run(gemini, argv.slice(1), { cwd: project, env });
        const stored = JSON.parse(await readFile(path.join(project, '.gemini', 'settings.json'), 'utf8')) as { mcpServers: Record<string, { command: string; args: string[] }> };
        assert.deepEqual(stored.mcpServers.relay, { command: server.command, args: server.args }, 'Gemini stored what this test spawns');
        const untrusted = await run(gemini, ['mcp', 'list'], { cwd: project, env, timeout: 120_000 });
        assert.match(untrusted.stdout + untrusted.stderr, /^. relay: .* Disabled$/m, 'as hosts.md says: disabled in an untrusted folder');
        await mkdir(path.join(home, '.gemini'), { recursive: true });
        await writeFile(path.join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }));
        if (door === 'serve') await run(gemini, argv.slice(1).map((w) => w.replace(/^relay$/, 'no-init').replace(/\/corpus$/, '/never-made')), { cwd: project, env });
        const trusted = await run(gemini, ['mcp', 'list'], { cwd: project, env, timeout: 120_000 });
        assert.match(trusted.stdout + trusted.stderr, /^. relay: .* Connected$/m, trusted.stdout + trusted.stderr);
        if (door === 'serve') assert.match(trusted.stdout + trusted.stderr, /^. no-init: .* Disconnected$/m, 'what hosts.md quotes for a skipped init');
      } else {
        t.diagnostic('gemini is not on PATH: `gemini mcp add` and `gemini mcp list` (untrusted, then trusted) were not run, only the command and args the line stores');
      }
      await actAsHost(t, server.command, server.args, where.corpus);
    });

    test('Codex: `codex mcp add` stores the command after `--`, which serves', async (t) => {
      const where = await place(t, door);
      const argv = words(where.swap(await oneLine('codex', door)));
      const server = afterDashes(argv);
      assert.deepEqual(argv.slice(0, 3), ['codex', 'mcp', 'add']);
      assert.equal(server.name, 'relay');
      const codex = onPath('codex');
      if (codex) {
        const { project, env } = await hostHome(t);
        await run(codex, argv.slice(1), { cwd: project, env });
        const { stdout } = await run(codex, ['mcp', 'get', 'relay', '--json'], { cwd: project, env });
        const { transport } = JSON.parse(stdout) as { transport: { command: string; args: string[] } };
        assert.deepEqual({ command: transport.command, args: transport.args }, { command: server.command, args: server.args }, 'Codex stored what this test spawns');
      } else {
        t.diagnostic('codex is not on PATH: `codex mcp add` was not run, only the command after `--` (Codex has no check that starts the server)');
      }
      await actAsHost(t, server.command, server.args, where.corpus);
    });

    test('the Inspector CLI lines, run by bash as written: tools/list, then a tools/call that appends', { timeout: 120_000 }, async (t) => {
      const where = await place(t, door);
      const [list, call] = await blocksOf('inspector', door);
      assert.ok(list && call, 'a tools/list line and a tools/call line');
      const inspector = async (line: string) => {
        const out = await runProcess(['bash', '-c', where.swap(line.trim())], { cwd: await tempDir(t), env: { ...process.env, P_E_RELAY_LOG: 'warn' } });
        assert.equal(out.code, 0, out.stderr);
        return JSON.parse(out.stdout) as Record<string, unknown>;
      };
      const listed = (await inspector(list.text)) as { tools: { name: string }[] };
      assert.deepEqual(listed.tools.map((tool) => tool.name).sort(), TOOLS);
      const called = (await inspector(call.text)) as { structuredContent: { id: string } };
      assert.deepEqual(await records(where.corpus), [called.structuredContent.id], 'the call appended one record, under the id it answered');
    });

    test('the Python SDK snippet, run by Python: lists the tools and appends', { timeout: 600_000 }, async (t) => {
      const unavailable = await pythonSdk();
      if (unavailable !== null) return t.skip(unavailable);
      const where = await place(t, door);
      const [block] = await blocksOf('python-sdk', door);
      const script = path.join(await tempDir(t), 'client.py');
      await writeFile(script, where.swap(block!.text));
      const { stdout } = await run(PYTHON, [script], { timeout: 60_000, env: { ...process.env, P_E_RELAY_LOG: 'warn' } });
      const [listed, stored] = stdout.trim().split('\n');
      assert.equal(listed, `[${TOOLS.map((name) => `'${name}'`).join(', ')}]`);
      assert.match(stored!, /^stored relay-\d+\b/);
      assert.equal((await records(where.corpus)).length, 1);
    });
  });
}

describe('troubleshooting: the server line run by hand', () => {
  test('serve: silent with exit 0 on a store, and with `init` skipped it says to run init and exits 1', async (t) => {
    const line = await oneLine('troubleshoot', 'serve');
    const where = await shared(t);
    const healthy = await runProcess(['sh', '-c', where.swap(line)]);
    assert.deepEqual([healthy.code, healthy.stderr], [0, '']);

    const skipped = await tempDir(t);
    const noInit = await runProcess(['sh', '-c', line.replaceAll('/path/to/shared', skipped).replaceAll('/path/to/p-e-relay', ROOT)]);
    assert.equal(noInit.code, 1);
    assert.ok(noInit.stderr.includes(`p-e-relay init --corpus ${skipped}/corpus`), noInit.stderr);
  });

  test('bridge: exits 0 either way; on stderr it names a missing key file and a hub that does not answer', { timeout: 60_000 }, async (t) => {
    const line = await oneLine('troubleshoot', 'bridge');
    const where = await hub(t);
    const keys = await tempDir(t);
    const down = `http://127.0.0.1:${await closedPort()}`;
    const [healthy, broken] = await Promise.all([
      runProcess(['sh', '-c', where.swap(line)]),
      runProcess(['sh', '-c', line.replaceAll('http://hub.example:7077', down).replaceAll('/path/to/keys', keys).replaceAll('/path/to/p-e-relay', ROOT)]),
    ]);
    assert.equal(healthy.code, 0, healthy.stderr);
    const url = where.swap('http://hub.example:7077');
    assert.equal(healthy.stderr, `p-e-relay info: bridge to ${url}/mcp as agent scout-7\n`, 'only the line hosts.md quotes');

    assert.equal(broken.code, 0, broken.stderr);
    assert.ok(broken.stderr.includes(path.join(keys, 'scout-7.key')), broken.stderr);
    assert.ok(broken.stderr.includes(`the hub at ${down} does not answer`), broken.stderr);
  });
});
