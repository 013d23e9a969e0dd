/**
 * The copy-paste recipes of docs/agents.md, run as their hosts run them:
 * every hook command in its JSON blocks through `sh -c` with the event JSON
 * on stdin (Claude Code, Codex hooks), and the Codex notify line as an argv
 * with the event JSON appended. Only the corpus path is swapped for a temp
 * one, `p-e-relay` is this checkout's on the PATH, and `notify-send` is a
 * stand-in that records what it was asked to show.
 */
import assert from 'node:assert/strict';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../lib/store/store.js';
import { ROOT, record, runProcess, tempStore } from '../support/helpers.js';

const DOC = path.join(ROOT, 'docs', 'agents.md');

interface HookEntry {
  event: string;
  command: string;
}

async function hookCommands(): Promise<HookEntry[]> {
  const doc = await readFile(DOC, 'utf8');
  const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as { hooks?: Record<string, { hooks: Record<string, unknown>[] }[]> });
  const hooks = blocks.flatMap((block) => Object.entries(block.hooks ?? {}).flatMap(([event, groups]) => groups.flatMap((g) => g.hooks.map((h) => ({ event, hook: h })))));
  // The keys both hosts read by these names (Codex's timeout is `timeout`, in seconds; timeoutSec is only an alias).
  for (const { hook } of hooks) assert.deepEqual(Object.keys(hook).filter((k) => !['type', 'command', 'timeout'].includes(k)), [], JSON.stringify(hook));
  return hooks.map(({ event, hook }) => ({ event, command: hook.command as string }));
}

async function setup(t: import('node:test').TestContext): Promise<{ corpus: string; env: NodeJS.ProcessEnv; shown: string }> {
  const { corpus, dir } = await tempStore(t);
  const shown = path.join(dir, 'shown');
  const stub = path.join(dir, 'notify-send');
  await writeFile(stub, `#!/bin/sh\nprintf '%s|%s\\n' "$1" "$2" >> '${shown}'\n`);
  await chmod(stub, 0o755);
  const env = { ...process.env, PATH: `${dir}:${path.join(ROOT, 'bin')}:${process.env.PATH}` };
  // The agents start before the records land: a broadcast from before an agent's first run is not its to deliver (spec §8d).
  for (const agent of ['scout-7', 'codex-1']) {
    const first = await runProcess(['p-e-relay', 'inbox', '--corpus', corpus, '--to', agent, '--to', 'all'], { env });
    assert.equal(first.code, 0, first.stderr);
  }
  const store = await openStore({ corpus, watch: 'none' });
  for (const to of ['scout-7', 'codex-1', 'all']) await store.append(Buffer.from(record({ kind: 'question', from: 'planner', to }, `a question for ${to}`)), { depositedBy: 'mcp' });
  await store.close();
  return { corpus, shown, env };
}

test('docs/agents.md: every hook command answers its event in the shape the host reads', async (t) => {
  const entries = await hookCommands();
  assert.deepEqual(entries.map((e) => e.event), ['PostToolUse', 'Stop', 'Stop'], 'Claude Code PostToolUse and Stop, Codex Stop');
  for (const { event, command } of entries) {
    const { corpus, env } = await setup(t);
    const name = /--to (\S+)/.exec(command)![1]!;
    const input = JSON.stringify({ session_id: 's1', cwd: ROOT, hook_event_name: event, ...(event === 'Stop' ? { stop_hook_active: false } : { tool_name: 'Bash', tool_input: { command: 'ls' }, tool_response: { stdout: '' } }) });
    const result = await runProcess(['sh', '-c', command.replace('/path/to/corpus', corpus)], { env, input });
    assert.equal(result.code, 0, result.stderr);
    const answer = JSON.parse(result.stdout) as { decision?: string; reason?: string; hookSpecificOutput?: { hookEventName: string; additionalContext: string } };
    const text = event === 'Stop' ? (assert.equal(answer.decision, 'block'), answer.reason!) : (assert.equal(answer.hookSpecificOutput?.hookEventName, event), answer.hookSpecificOutput.additionalContext);
    assert.match(text, new RegExp(`a question for ${name}`));
    assert.match(text, /a question for all/, 'broadcasts reach everyone who listens for all');
    const again = await runProcess(['sh', '-c', command.replace('/path/to/corpus', corpus)], { env, input });
    assert.equal(again.stdout, '', 'delivered once');
  }
});

test('docs/agents.md: the Codex notify line shows one line per record and leaves the mark for the Stop hook', async (t) => {
  const doc = await readFile(DOC, 'utf8');
  const line = /^notify = (\[.*\])$/m.exec(doc)?.[1];
  assert.ok(line, 'a notify = […] line');
  const { corpus, env, shown } = await setup(t);
  const argv = (JSON.parse(line) as string[]).map((arg) => arg.replace('/path/to/corpus', corpus));
  const event = JSON.stringify({ type: 'agent-turn-complete', 'thread-id': 't1', 'turn-id': 'u1', cwd: ROOT, 'input-messages': ['go'], 'last-assistant-message': 'done' });
  const result = await runProcess([...argv, event], { env });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(await readFile(shown, 'utf8'), 'p-e-relay|relay-0002 question from planner: a question for codex-1\n');
  const mark = await readFile(path.join(corpus, '.state', 'marks', 'codex-1', 'to=all,codex-1'), 'utf8').catch(() => null);
  assert.equal(mark, null, '--peek wrote no mark: the Stop hook still delivers it to the model');
});
