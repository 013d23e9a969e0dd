/**
 * `p-e-relay inbox` run the way each host runs it: Claude Code's and Codex's
 * command hooks (the event JSON on stdin, the answer JSON on stdout), Codex's
 * notify program (the event JSON as the last argument), a person at a
 * terminal. Checked for the shape each host reads, and for the mark moving
 * only once the output is out. The real CLI as a child process, real files.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../lib/store/store.js';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { BIN, errorCode, record, runCli, stdioClient, tempStore, textOf } from '../support/helpers.js';
import { FORGERY, boundaryOf, fencedRecords } from '../support/fence.js';

/** What Claude Code sends a PostToolUse command hook on stdin. */
const CLAUDE_POST_TOOL_USE = {
  session_id: 'abc123',
  transcript_path: '/home/u/.claude/projects/p/abc123.jsonl',
  cwd: '/work/project',
  permission_mode: 'default',
  hook_event_name: 'PostToolUse',
  tool_name: 'Bash',
  tool_input: { command: 'npm test', description: 'Run the tests' },
  tool_response: { stdout: 'ok', stderr: '', interrupted: false },
  tool_use_id: 'toolu_01',
};
/** What Claude Code sends a Stop hook. */
const CLAUDE_STOP = { session_id: 'abc123', transcript_path: '/home/u/.claude/projects/p/abc123.jsonl', cwd: '/work/project', permission_mode: 'default', hook_event_name: 'Stop', stop_hook_active: false };
/** What Codex sends a Stop hook (hooks.json). */
const CODEX_STOP = { session_id: 'th_1', turn_id: 'turn_7', transcript_path: null, cwd: '/work/project', hook_event_name: 'Stop', model: 'gpt-5-codex', stop_hook_active: false, last_assistant_message: 'Done.' };
/** What Codex passes its notify program, as the last argument. */
const CODEX_NOTIFY = { type: 'agent-turn-complete', 'thread-id': 'th_1', 'turn-id': 'turn_7', cwd: '/work/project', 'input-messages': ['fix the tests'], 'last-assistant-message': 'Done.' };

async function seed(corpus: string, records: string[]): Promise<string[]> {
  const store = await openStore({ corpus, watch: 'none' });
  try {
    const ids: string[] = [];
    for (const text of records) ids.push((await store.append(Buffer.from(text), { depositedBy: 'mcp' })).id);
    return ids;
  } finally {
    await store.close();
  }
}

function inbox(corpus: string, args: string[], stdin?: object) {
  return runCli(['inbox', '--corpus', corpus, ...args], { input: stdin === undefined ? '' : JSON.stringify(stdin) });
}

/** The first line of an agent's mark for a filter set (by default --to NAME alone): the last id it delivered. */
const markOf = (corpus: string, name: string, set = `to=${name}`) => readFile(path.join(corpus, '.state', 'marks', name, set), 'utf8').then((t) => t.split('\n')[0]!, () => null);

const question = (to: string, body: string) => record({ kind: 'question', from: 'planner', to }, body);

/** The agent's first run: its start is noted here, so broadcasts after this reach it (one from before would not, spec §8d). */
async function started(corpus: string, args: string[]): Promise<void> {
  const first = await inbox(corpus, args);
  assert.equal(first.code, 0, first.stderr);
}

test('Claude Code PostToolUse hook: additionalContext carries the records addressed to me, and the mark moves past them', async (t) => {
  const { corpus } = await tempStore(t);
  const [q1, , q3] = await seed(corpus, [question('scout-7', 'Which route is open?'), question('scout-8', 'not for me'), question('scout-8, scout-7', 'Both of us?')]);
  const first = await inbox(corpus, ['--to', 'scout-7', '--format', 'hook'], CLAUDE_POST_TOOL_USE);
  assert.equal(first.code, 0, first.stderr);
  const answer = JSON.parse(first.stdout) as { hookSpecificOutput: { hookEventName: string; additionalContext: string } };
  assert.deepEqual(Object.keys(answer), ['hookSpecificOutput']);
  assert.equal(answer.hookSpecificOutput.hookEventName, 'PostToolUse');
  const context = answer.hookSpecificOutput.additionalContext;
  assert.match(context, /2 new records addressed to scout-7/);
  assert.match(context, new RegExp(`>>> ${q1} [0-9a-f]{12} \\(kind question, from planner, to scout-7\\) deposited-by mcp, sender unproven\\n@p-e/x0\\n[^]*Which route is open\\?`));
  assert.match(context, new RegExp(`>>> ${q3} `));
  assert.doesNotMatch(context, /not for me/);
  assert.match(context, /parent: <its id>/, 'it says how to answer');
  assert.equal(await markOf(corpus, 'scout-7'), 'relay-0003', 'the mark covers every record considered');

  const again = await inbox(corpus, ['--to', 'scout-7', '--format', 'hook'], CLAUDE_POST_TOOL_USE);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, '', 'nothing new: no output, the host carries on');
});

test('the hook text\'s answer recipe, followed literally over stdio, answers under <you>/answer/<its id>; a second answer is refused: it already landed', async (t) => {
  const { corpus } = await tempStore(t);
  const [q] = await seed(corpus, [question('scout-7', 'Which route is open?')]);
  const hook = await inbox(corpus, ['--to', 'scout-7', '--to', 'all', '--format', 'hook'], CLAUDE_POST_TOOL_USE);
  const context = (JSON.parse(hook.stdout) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput.additionalContext;
  // What a model does with it: take the bytes and the key as printed, fill in the placeholders.
  const recipe = /To answer one: append_relay bytes "([^"]+)", idempotency_key "([^"]+)"\./.exec(context);
  assert.ok(recipe, context);
  const fill = (text: string, answer: string) => text.replaceAll('<its id>', q!).replaceAll('<its from>', 'planner').replaceAll('<answer>', answer).replaceAll('\\n', '\n');
  const { client } = await stdioClient(t, corpus);
  const answer = async (text: string) => (await client.callTool({ name: 'append_relay', arguments: { bytes: fill(recipe[1]!, text), idempotency_key: fill(recipe[2]!, '') } })) as CallToolResult;

  const first = await answer('The north one.');
  assert.equal(first.isError, undefined, textOf(first));
  assert.equal(recipe[2], 'scout-7/answer/<its id>');
  const replies = (await client.callTool({ name: 'list_replies', arguments: { id: q } })).structuredContent as { replies: { id: string; kind: string; from: string; to: string; parent: string }[] };
  assert.deepEqual(replies.replies.map(({ kind, from, to, parent }) => ({ kind, from, to, parent })), [{ kind: 'answer', from: 'scout-7', to: 'planner', parent: q }]);

  const again = await answer('The north one, I think.');
  assert.equal(errorCode(again), 'idempotency_conflict');
  assert.match(textOf(again), new RegExp(`Your answer to ${q} already landed as ${replies.replies[0]!.id}: do not send it again`));
});

test('Claude Code Stop hook: new records block the stop with a reason; nothing new lets it stop', async (t) => {
  const { corpus } = await tempStore(t);
  await started(corpus, ['--to', 'scout-7', '--to', 'all']);
  await seed(corpus, [question('all', 'Everyone: status?')]);
  const blocked = await inbox(corpus, ['--to', 'scout-7', '--to', 'all', '--format', 'hook'], CLAUDE_STOP);
  assert.equal(blocked.code, 0, blocked.stderr);
  const answer = JSON.parse(blocked.stdout) as { decision: string; reason: string };
  assert.deepEqual(Object.keys(answer).sort(), ['decision', 'reason']);
  assert.equal(answer.decision, 'block');
  assert.match(answer.reason, /Everyone: status\?/);

  const allowed = await inbox(corpus, ['--to', 'scout-7', '--to', 'all', '--format', 'hook'], { ...CLAUDE_STOP, stop_hook_active: true });
  assert.equal(allowed.code, 0);
  assert.equal(allowed.stdout, '', 'the second stop in a row goes through: the mark moved');
});

test('Codex Stop hook: the same decision: block answer, from the event Codex sends', async (t) => {
  const { corpus } = await tempStore(t);
  const [id] = await seed(corpus, [question('codex-1', 'Can you take the parser?')]);
  const result = await inbox(corpus, ['--to', 'codex-1', '--format', 'hook'], CODEX_STOP);
  assert.equal(result.code, 0, result.stderr);
  const answer = JSON.parse(result.stdout) as { decision: string; reason: string };
  assert.equal(answer.decision, 'block');
  assert.match(answer.reason, new RegExp(`${id}[^]*Can you take the parser\\?`));
  assert.equal(await markOf(corpus, 'codex-1'), id);
});

test('UserPromptSubmit and SessionStart hooks get additionalContext under their own event name', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [question('scout-7', 'one'), question('scout-7', 'two')]);
  for (const event of ['SessionStart', 'UserPromptSubmit']) {
    const result = await inbox(corpus, ['--to', 'scout-7', '--format', 'hook', '--peek'], { ...CLAUDE_STOP, hook_event_name: event, stop_hook_active: undefined });
    assert.equal((JSON.parse(result.stdout) as { hookSpecificOutput: { hookEventName: string } }).hookSpecificOutput.hookEventName, event);
  }
});

test('a hook event that cannot show the model anything prints nothing and leaves the mark', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [question('scout-7', 'hello')]);
  const result = await inbox(corpus, ['--to', 'scout-7', '--format', 'hook'], { ...CLAUDE_POST_TOOL_USE, hook_event_name: 'PreCompact' });
  assert.equal(result.code, 0);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /PreCompact/);
  assert.equal(await markOf(corpus, 'scout-7'), null);
});

test('--format hook on stdin it cannot read exits 0 with no output (exit 2 would be a blocking error to Claude Code), warns what came instead, and keeps the mark', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [question('scout-7', 'hello')]);
  const cases: [string, RegExp][] = [
    ['', /stdin was empty/],
    ['hello, world', /stdin held 12 bytes that are not JSON, starting "hello, world"/],
    ['[1,2]', /stdin held JSON an array, not an object/],
    ['{"event":"Stop","cwd":"/w"}', /without a hook_event_name string \(its keys: event, cwd\)/],
  ];
  for (const [input, said] of cases) {
    const result = await runCli(['inbox', '--corpus', corpus, '--to', 'scout-7', '--format', 'hook'], { input });
    assert.equal(result.code, 0, input);
    assert.equal(result.stdout, '', input);
    assert.match(result.stderr, /hook_event_name/, input);
    assert.match(result.stderr, said, input);
  }
  assert.equal(await markOf(corpus, 'scout-7'), null);
});

test('a mistake in the hook\'s own command line exits 1 (shown to the user), never 2 (a block that would fire at every Stop); elsewhere it stays 2', async (t) => {
  const { corpus } = await tempStore(t);
  for (const args of [['--to', 'scout-7', '--format', 'hook', '--bogus'], ['--to', '', '--format=hook'], ['--format', 'hook']]) {
    const result = await inbox(corpus, args, CLAUDE_STOP);
    assert.equal(result.code, 1, args.join(' '));
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /p-e-relay inbox: /);
  }
  assert.equal((await inbox(corpus, ['--to', 'scout-7', '--bogus'])).code, 2, 'a person at a terminal still gets bad usage');
});

test('a Stop that says stop_hook_active is let through with nothing printed; the records stay for the next run', async (t) => {
  const { corpus } = await tempStore(t);
  await started(corpus, ['--to', 'scout-7', '--to', 'all']);
  const [id] = await seed(corpus, [question('all', 'one more thing')]);
  for (const stop of [CLAUDE_STOP, CODEX_STOP, { ...CLAUDE_STOP, hook_event_name: 'SubagentStop' }]) {
    const result = await inbox(corpus, ['--to', 'scout-7', '--to', 'all', '--format', 'hook'], { ...stop, stop_hook_active: true });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '', `${stop.hook_event_name} already continuing: never block it again`);
  }
  assert.equal(await markOf(corpus, 'scout-7', 'to=all,scout-7'), null, 'nothing delivered: no mark was written');
  const next = await inbox(corpus, ['--to', 'scout-7', '--to', 'all', '--format', 'hook'], CLAUDE_POST_TOOL_USE);
  assert.match(JSON.parse(next.stdout).hookSpecificOutput.additionalContext, new RegExp(`>>> ${id} [^]*one more thing`));
});

test('the Stop loop ends: a peer adding a record before every Stop gets one block, then the host\'s stop_hook_active lets the agent stop', async (t) => {
  const { corpus } = await tempStore(t);
  await started(corpus, ['--to', 'scout-7', '--to', 'all']);
  let blocks = 0;
  let active = false;
  // The host's side, as Claude Code runs it: a blocked Stop makes the agent go on, and its next Stop says stop_hook_active.
  for (let stop = 0; stop < 10; stop++) {
    await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'all' }, `turn ${stop}`)]);
    const result = await inbox(corpus, ['--to', 'scout-7', '--to', 'all', '--format', 'hook'], { ...CLAUDE_STOP, stop_hook_active: active });
    if (result.stdout === '') break;
    blocks++;
    active = true;
  }
  assert.equal(blocks, 1, 'one block per stop, not one per peer record');
});

test('one hook run injects at most 10 records and 16 KiB of their text; the rest comes with the next', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, Array.from({ length: 14 }, (_, i) => question('scout-7', `q${i + 1} ` + 'x'.repeat(3000))));
  const runs: string[] = [];
  for (let i = 0; i < 4; i++) runs.push(JSON.parse((await inbox(corpus, ['--to', 'scout-7', '--format', 'hook'], CLAUDE_STOP)).stdout || '{"reason":""}').reason);
  const shown = runs.map((reason) => [...reason.matchAll(/^>>> (relay-\d+) /gm)].map((m) => m[1]));
  assert.deepEqual(shown.map((ids) => ids.length), [5, 5, 4, 0], 'five 3 KB records fit in 16 KiB');
  assert.ok(runs.every((reason) => Buffer.byteLength(reason) < 17 * 1024), runs.map((r) => r.length).join(' '));
  assert.match(runs[0]!, /More records are waiting/);
});

test('a record\'s claims count in a hook run\'s 16 KiB and are cut there: records with a 60 KB kind: make a short hook answer', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, Array.from({ length: 3 }, (_, i) => record({ kind: 'k'.repeat(60_000), from: 'planner', to: 'scout-7' }, `q${i + 1}`)));
  const run = await inbox(corpus, ['--to', 'scout-7', '--format', 'hook'], CLAUDE_STOP);
  assert.equal(run.code, 0, run.stderr);
  assert.ok(Buffer.byteLength(run.stdout) < 16 * 1024, `${Buffer.byteLength(run.stdout)} bytes`);
  const reason = (JSON.parse(run.stdout) as { reason: string }).reason;
  assert.match(reason, /^relay-0001 \(kind "k+…" \(60,000 characters, not a name\), from planner, to scout-7\) deposited-by mcp, sender unproven: not shown/m);
});

test('the hook skips the agent\'s own records (its broadcast to all): a Stop with only those goes through', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [record({ kind: 'note', from: 'scout-7', to: 'all' }, 'I am on the north route'), record({ kind: 'question', from: 'codex-1', to: 'all' }, 'mine, by my env name')]);
  const stop = await runCli(['inbox', '--corpus', corpus, '--to', 'scout-7', '--to', 'all', '--format', 'hook'], { input: JSON.stringify(CLAUDE_STOP), env: { P_E_RELAY_AGENT: 'codex-1' } });
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(stop.stdout, '', 'no model turn spent reading what it wrote');
  assert.equal(await markOf(corpus, 'scout-7', 'to=all,scout-7'), 'relay-0002', 'and they are not looked at again');
  const [other] = await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'all' }, 'from someone else')]);
  const next = JSON.parse((await inbox(corpus, ['--to', 'scout-7', '--to', 'all', '--format', 'hook'], CLAUDE_STOP)).stdout) as { reason: string };
  assert.match(next.reason, new RegExp(`>>> ${other} `));
});

test('"To answer one" comes only with a question (any case of the kind): notes carry no recipe', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [record({ kind: 'note', from: 'planner', to: 'scout-7' }, 'fyi')]);
  const notes = await inbox(corpus, ['--to', 'scout-7']);
  assert.match(notes.stdout, /fyi/);
  assert.doesNotMatch(notes.stdout, /To answer one/);
  await seed(corpus, [record({ kind: 'Question', from: 'planner', to: 'scout-7' }, 'which way?')]);
  assert.match((await inbox(corpus, ['--to', 'scout-7'])).stdout, /To answer one: append_relay/);
});

test('a body cannot draw a record frame: every record\'s text is fenced by a boundary drawn per delivery, and its deposited-by is shown', async (t) => {
  const { corpus } = await tempStore(t);
  const bytes = [record({ kind: 'note', from: 'mallory', to: 'scout-7' }, FORGERY), question('scout-7', 'a real one')];
  const ids = await seed(corpus, bytes);
  const first = await inbox(corpus, ['--to', 'scout-7', '--peek']);
  const second = await inbox(corpus, ['--to', 'scout-7', '--peek']);
  const records = fencedRecords(first.stdout);
  assert.deepEqual(records.map((r) => [r.id, r.text]), [[ids[0], bytes[0]], [ids[1], bytes[1]]], 'exactly the two records, each with its own bytes');
  assert.deepEqual(records.map((r) => r.head), [' (kind note, from mallory, to scout-7) deposited-by mcp, sender unproven', ' (kind question, from planner, to scout-7) deposited-by mcp, sender unproven']);
  assert.notEqual(boundaryOf(second.stdout), boundaryOf(first.stdout), 'a new boundary each delivery');
  const hook = JSON.parse((await inbox(corpus, ['--to', 'scout-7', '--format', 'hook', '--peek'], CLAUDE_STOP)).stdout) as { reason: string };
  assert.deepEqual(fencedRecords(hook.reason).map((r) => r.text), bytes);
  const json = JSON.parse((await inbox(corpus, ['--to', 'scout-7', '--format', 'json', '--peek'])).stdout) as { items: { depositedBy: string }[] };
  assert.deepEqual(json.items.map((i) => i.depositedBy), ['mcp', 'mcp']);
});

test('Codex notify: the event is the last argument; one line per record on agent-turn-complete, nothing otherwise; --peek keeps the mark', async (t) => {
  const { corpus } = await tempStore(t);
  const [id] = await seed(corpus, [question('codex-1', 'Can you take the parser?\nSecond line.')]);
  const result = await runCli(['inbox', '--corpus', corpus, '--to', 'codex-1', '--peek', '--format', 'codex-notify', JSON.stringify(CODEX_NOTIFY)]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, `${id} question from planner: Can you take the parser?\n`);
  assert.equal(await markOf(corpus, 'codex-1'), null, '--peek never moves the mark');
  const other = await runCli(['inbox', '--corpus', corpus, '--to', 'codex-1', '--format', 'codex-notify', JSON.stringify({ ...CODEX_NOTIFY, type: 'approval-requested' })]);
  assert.equal(other.code, 0);
  assert.equal(other.stdout, '');
  assert.equal(await markOf(corpus, 'codex-1'), null);
});

test('matching is literal: Scout-7 is not scout-7, and a record with no to: reaches no one', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [question('Scout-7', 'capital'), record({ kind: 'note', from: 'planner' }, 'to nobody'), question('scout-70', 'prefix')]);
  const result = await inbox(corpus, ['--to', 'scout-7', '--format', 'json']);
  const delivered = JSON.parse(result.stdout) as { items: unknown[]; mark: string };
  assert.deepEqual(delivered.items, []);
  assert.equal(delivered.mark, 'relay-0003', 'records that match nobody still move the mark: they are never looked at again');
});

test('text for a person; --mark FILE keeps the mark where asked; a second run starts after it', async (t) => {
  const { corpus, dir } = await tempStore(t);
  await seed(corpus, [question('scout-7', 'first')]);
  const mark = path.join(dir, 'my-mark');
  const first = await inbox(corpus, ['--to', 'scout-7', '--mark', mark]);
  assert.match(first.stdout, /^p-e-relay: 1 new record addressed to scout-7\./);
  assert.equal((await readFile(mark, 'utf8')).trim(), 'relay-0001');
  await seed(corpus, [question('scout-7', 'second')]);
  const second = await inbox(corpus, ['--to', 'scout-7', '--mark', mark]);
  assert.match(second.stdout, /second/);
  assert.doesNotMatch(second.stdout, /first/);
  assert.equal((await inbox(corpus, ['--to', 'scout-7', '--mark', mark])).stdout, 'p-e-relay: nothing new for scout-7\n');
});

test('one delivery carries at most 20 records; the mark stops after the last one carried, and the next run brings the rest', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, Array.from({ length: 25 }, (_, i) => question('scout-7', `q${i + 1}`)));
  const first = JSON.parse((await inbox(corpus, ['--to', 'scout-7', '--format', 'json'])).stdout) as { items: { id: string }[]; more: boolean; mark: string };
  assert.equal(first.items.length, 20);
  assert.equal(first.more, true);
  assert.equal(first.mark, 'relay-0020');
  const rest = JSON.parse((await inbox(corpus, ['--to', 'scout-7', '--format', 'json'])).stdout) as { items: { id: string }[]; more: boolean };
  assert.deepEqual(rest.items.map((i) => i.id), ['relay-0021', 'relay-0022', 'relay-0023', 'relay-0024', 'relay-0025']);
  assert.equal(rest.more, false);
});

test('the mark moves only after the output is out: a hook whose stdout is gone delivers again next time', async (t) => {
  const { corpus } = await tempStore(t);
  await seed(corpus, [question('scout-7', 'do not lose me')]);
  // The host went away: our stdout's reader is closed before we write.
  const child = spawn(process.execPath, [BIN, 'inbox', '--corpus', corpus, '--to', 'scout-7', '--format', 'hook'], { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdout.destroy();
  child.stdin.end(JSON.stringify(CLAUDE_POST_TOOL_USE));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  assert.notEqual(code, 0);
  assert.equal(await markOf(corpus, 'scout-7'), null, 'nothing was delivered: no mark was written (a mark is written when it moves)');
  const retry = await inbox(corpus, ['--to', 'scout-7', '--format', 'hook'], CLAUDE_POST_TOOL_USE);
  assert.match(retry.stdout, /do not lose me/);
});

test('a mark file that holds no id is refused with a sentence (exit 1), not read as the start', async (t) => {
  const { corpus, dir } = await tempStore(t);
  const mark = path.join(dir, 'bad-mark');
  await writeFile(mark, 'yesterday\n');
  const result = await inbox(corpus, ['--to', 'scout-7', '--mark', mark]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /bad-mark cannot be used: it holds "yesterday"/);
});
