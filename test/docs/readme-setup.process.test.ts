/**
 * README's stdio set-up, followed as written by a new user: the `init` line
 * makes the shared corpus (its keys beside it), then the Claude Code line's
 * server command (what follows `--`), run by a real SDK client over stdio,
 * serves it. Only /path/to/… is swapped for a temp directory. The README's
 * host lines are the ones docs/hosts.md keeps (and its test runs), word
 * for word, so the two cannot drift apart.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ROOT, runProcess, tempDir, textOf } from '../support/helpers.js';

async function section(heading: string): Promise<string> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const found = new RegExp(`## ${heading}\\n([\\s\\S]*?)\\n## `).exec(readme)?.[1];
  assert.ok(found, `README has its section "${heading}"`);
  return found;
}

/** The lines of the fenced sh blocks of a README section that run `command`. */
function linesRunning(text: string, command: string): string[] {
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.split('\n')).filter((line) => line.startsWith(`${command} `));
}

async function hostsBlock(host: string, door: string): Promise<string> {
  const page = await readFile(path.join(ROOT, 'docs', 'hosts.md'), 'utf8');
  const block = new RegExp(`^\`\`\`sh host=${host} door=${door}\\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(page)?.[1];
  assert.ok(block, `docs/hosts.md has a ${host} ${door} block`);
  return block.trim();
}

test('README\'s stdio section: init the shared corpus first, then the Claude Code line\'s server serves it', async (t) => {
  const stdio = await section('Connect an agent over stdio');
  const dir = await tempDir(t);
  const swap = (text: string) => text.replaceAll('/path/to/shared', dir).replaceAll('/path/to/p-e-relay', ROOT);
  const initLine = /^(\.\/bin\/p-e-relay init [^#\n]*?)\s*(#.*)?$/m.exec(stdio)?.[1];
  assert.ok(initLine, 'the section says to init the corpus');
  const made = await runProcess(['sh', '-c', swap(initLine)], { cwd: ROOT });
  assert.equal(made.code, 0, made.stderr);
  assert.deepEqual((await readdir(dir)).sort(), ['corpus', 'keys'], 'the store, and its keys beside it');

  const [claude] = linesRunning(stdio, 'claude');
  assert.ok(claude, 'the section gives the Claude Code line');
  const [command, ...args] = swap(claude.slice(claude.indexOf(' -- ') + 4)).split(' ');
  const client = new Client({ name: 'readme-user', version: '0' });
  await client.connect(new StdioClientTransport({ command: command!, args, env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' } }));
  t.after(() => client.close());
  const appended = await client.callTool({ name: 'append_relay', arguments: { bytes: '@p-e/x0\nfrom: scout-7\n\nhello\n' } });
  assert.match(textOf(appended), /^stored relay-0001\b/, textOf(appended));
  assert.deepEqual((await readdir(path.join(dir, 'corpus'))).filter((f) => f.startsWith('relay-')), ['relay-0001']);
});

test('README\'s host lines are docs/hosts.md\'s, word for word, and it runs no Inspector line of its own', async () => {
  const stdio = await section('Connect an agent over stdio');
  const bridge = await section('Connect an agent to a remote hub \\(the bridge\\)');
  assert.deepEqual(linesRunning(stdio, 'claude'), [await hostsBlock('claude-code', 'serve')]);
  assert.deepEqual(linesRunning(bridge, 'claude'), [await hostsBlock('claude-code', 'bridge')]);
  for (const text of [stdio, bridge]) {
    assert.deepEqual([...linesRunning(text, 'npx'), ...linesRunning(text, 'cd')], [], 'the Inspector lines live in docs/hosts.md, where a test runs them');
    assert.match(text, /\(docs\/hosts\.md\)/, 'the section points to docs/hosts.md');
  }
});
