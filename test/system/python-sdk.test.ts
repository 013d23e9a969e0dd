/**
 * The official Python SDK's client (`pip install mcp`, 2.x) against the
 * stdio server, the hub and the bridge, in its default mode, which probes with
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

/** An agent's turn through the bridge: its first inbox wait, then its answer to the question it got; prints what it saw as JSON. */
const AGENT_SCRIPT = `
import asyncio, json, sys
from mcp import Client, StdioServerParameters

async def main():
    server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with Client(server) as client:
        waited = await client.call_tool('wait_for_relay', {'timeout_ms': 10000})
        item = waited.structured_content['appeared'][0]
        answer = '@p-e/x0\\nkind: answer\\nfrom: ana\\nto: bob\\nparent: ' + item['id'] + '\\n\\nthe north route'
        appended = await client.call_tool('append_relay', {'bytes': answer})
        print(json.dumps({
            'version': client.protocol_version,
            'instructions': client.initialize_result.instructions if getattr(client, 'initialize_result', None) else None,
            'question': item['id'],
            'agents': [a['name'] for a in waited.structured_content.get('agents', [])],
            'answer': appended.structured_content,
        }))

asyncio.run(main())
`;

test('the Python SDK client, as a named agent through the bridge, gets its question and answers it', { timeout: 600_000 }, async (t) => {
  const unavailable = await pythonSdk();
  if (unavailable !== null) return t.skip(unavailable);
  const dir = await tempDir(t);
  const h = await startTestHub(t, { agents: ['ana', 'bob'] });
  // Ana has been here before (so a question to her is hers), then bob asks her.
  await h.store.agents.seen('ana', 'signed');
  const question = await h.store.append(Buffer.from(record({ kind: 'question', from: 'bob', to: 'ana' }, 'which route?')), { depositedBy: 'http/bob', agent: 'bob' });
  const script = path.join(dir, 'agent.py');
  await writeFile(script, AGENT_SCRIPT);
  const { stdout } = await run(PYTHON, [script, process.execPath, BIN, 'bridge', '--url', h.url, '--agent', 'ana', '--keys', h.keys], { timeout: 60_000 });
  const seen = JSON.parse(stdout.trim().split('\n').pop()!) as { version: string; question: string; agents: string[]; answer: { id: string; depositedBy: string } };
  assert.equal(seen.version, '2026-07-28');
  assert.equal(seen.question, question.id, 'the inbox wait brought the question addressed to ana');
  assert.ok(seen.agents.includes('bob'), 'and who is here');
  assert.equal(seen.answer.depositedBy, 'mcp/ana', 'the answer was signed as ana');
  const replies = await h.store.replies(question.id);
  assert.deepEqual(replies.replies.map((r) => r.id), [seen.answer.id], 'one answer, naming the question');
});
