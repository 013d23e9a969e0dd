/**
 * README's stdio set-up, followed as written by a new user: the `init` line
 * makes the shared corpus (its keys beside it), then the `mcpServers`
 * entry's command and args, run by a real SDK client over stdio, serve it.
 * Only /path/to/… is swapped for a temp directory.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ROOT, runProcess, tempDir, textOf } from '../support/helpers.js';

async function stdioSection(): Promise<string> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const section = /## Connect an agent over stdio\n([\s\S]*?)\n## /.exec(readme)?.[1];
  assert.ok(section, 'README has its stdio section');
  return section;
}

test('README\'s stdio section: init the shared corpus first, then the mcpServers entry serves it', async (t) => {
  const section = await stdioSection();
  const dir = await tempDir(t);
  const swap = (text: string) => text.replaceAll('/path/to/shared', dir).replaceAll('/path/to/p-e-relay', ROOT);
  const initLine = /^(\.\/bin\/p-e-relay init [^#\n]*?)\s*(#.*)?$/m.exec(section)?.[1];
  assert.ok(initLine, 'the section says to init the corpus');
  const made = await runProcess(['sh', '-c', swap(initLine)], { cwd: ROOT });
  assert.equal(made.code, 0, made.stderr);
  assert.deepEqual((await readdir(dir)).sort(), ['corpus', 'keys'], 'the store, and its keys beside it');

  const config = JSON.parse(swap(/```json\n([\s\S]*?)```/.exec(section)![1]!)) as { mcpServers: { relay: { command: string; args: string[] } } };
  const { command, args } = config.mcpServers.relay;
  const client = new Client({ name: 'readme-user', version: '0' });
  await client.connect(new StdioClientTransport({ command, args, env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' } }));
  t.after(() => client.close());
  const appended = await client.callTool({ name: 'append_relay', arguments: { bytes: '@p-e/x0\nfrom: scout-7\n\nhello\n' } });
  assert.match(textOf(appended), /^stored relay-0001\b/, textOf(appended));
  assert.deepEqual((await readdir(path.join(dir, 'corpus'))).filter((f) => f.startsWith('relay-')), ['relay-0001']);
});
