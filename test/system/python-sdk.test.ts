/**
 * The official Python SDK's client (`pip install mcp`, 2.x) against the
 * stdio server and the hub, in its default mode, which probes with
 * server/discover and falls back to initialize on any error: the version it
 * ends up with must be 2026-07-28, so no fallback happened. The SDK is
 * installed into a venv under node_modules/.cache once
 * (test/support/python-sdk.ts); the test is skipped,
 * saying why, where Python or PyPI is not there (.ci/run installs Python).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { BIN, record, tempDir, tempStore } from '../support/helpers.js';
import { startTestHub } from '../support/http-helpers.js';
import { PYTHON, pythonSdk } from '../support/python-sdk.js';

const run = promisify(execFile);

/** A client script: connects in the SDK's default mode, calls exists, prints the version and the answer as JSON. */
const SCRIPT = `
import asyncio, json, sys
from mcp import Client, StdioServerParameters

async def main():
    kind, target = sys.argv[1], sys.argv[2]
    server = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:]) if kind == 'stdio' else target
    async with Client(server) as client:
        tools = await client.list_tools()
        result = await client.call_tool('exists', {'id': 'relay-0001'})
        print(json.dumps({
            'version': client.protocol_version,
            'tools': sorted(t.name for t in tools.tools),
            'text': ''.join(getattr(c, 'text', '') for c in result.content),
        }))

asyncio.run(main())
`;

async function pythonClient(dir: string, args: string[]): Promise<{ version: string; tools: string[]; text: string }> {
  const script = path.join(dir, 'client.py');
  await writeFile(script, SCRIPT);
  const { stdout } = await run(PYTHON, [script, ...args], { timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

test('the Python SDK client, in its default mode, gets 2026-07-28 over stdio and over HTTP with no fallback', { timeout: 600_000 }, async (t) => {
  const unavailable = await pythonSdk();
  if (unavailable !== null) return t.skip(unavailable);
  const dir = await tempDir(t);

  const { corpus } = await tempStore(t);
  const h = await startTestHub(t);
  await h.store.append(Buffer.from(record()), { depositedBy: 'cli/test' });
  const overStdio = await pythonClient(dir, ['stdio', '-', process.execPath, BIN, 'serve', '--corpus', corpus]);
  assert.equal(overStdio.version, '2026-07-28', 'stdio: the first answer was a 2026-07-28 one');
  assert.equal(overStdio.tools.length, 6);
  assert.equal(overStdio.text, 'relay-0001 UNKNOWN');

  const overHttp = await pythonClient(dir, ['http', new URL('/mcp', h.url).href]);
  assert.equal(overHttp.version, '2026-07-28', 'HTTP: the first answer was a 2026-07-28 one');
  assert.equal(overHttp.text, 'relay-0001 PRESENT');
});
