/**
 * `p-e-relay agents about NAME TEXT`: the operator sets an agent's about
 * (lib/cli/agents-command.ts), which `agents` then shows; the real CLI as a
 * child process on a temp corpus.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { runCli, tempStore } from '../support/helpers.js';
import { startTestHub } from '../support/http-helpers.js';

interface Entry { name: string; about?: string }

async function roster(corpus: string): Promise<Entry[]> {
  const r = await runCli(['agents', '--corpus', corpus, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { agents: Entry[] }).agents;
}

test('agents about NAME TEXT stores a kind: about record for NAME as the operator, and agents shows it quoted', async (t) => {
  const { corpus, keys } = await tempStore(t);
  assert.equal((await runCli(['keys', 'add', 'scout-7', '--keys', keys, '--corpus', corpus])).code, 0);
  const set = await runCli(['agents', 'about', 'scout-7', 'maps the repository; knows where each test lives', '--corpus', corpus]);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, 'relay-0001\n');
  const file = await readFile(path.join(corpus, 'relay-0001'), 'utf8');
  assert.match(file, /^provenance: authored\ndeposited-by: cli\/[^\n]+\n(?:[^\n]+\n)*agent: scout-7\n---\n@p-e\/x0\nkind: about\nfrom: scout-7\n\nmaps the repository; knows where each test lives\n$/);
  assert.deepEqual((await roster(corpus)).map((e) => [e.name, e.about]), [['scout-7', 'maps the repository; knows where each test lives']]);
  const text = await runCli(['agents', '--corpus', corpus]);
  assert.match(text.stdout, /^scout-7 {2}- {7} last seen \S+ {2}key {2}"maps the repository; knows where each test lives"$/m);
});

test('agents about with the about NAME has now stores nothing and prints the id that states it', async (t) => {
  const { corpus } = await tempStore(t);
  assert.equal((await runCli(['agents', 'about', 'ana', 'reviews tests', '--corpus', corpus])).stdout, 'relay-0001\n');
  const again = await runCli(['agents', 'about', 'ana', 'reviews tests', '--corpus', corpus]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'relay-0001\n');
  assert.equal((await runCli(['agents', 'about', 'ana', 'reviews tests and docs', '--corpus', corpus])).stdout, 'relay-0002\n');
  assert.equal((await runCli(['ls', '--corpus', corpus])).stdout, 'present (2): relay-0001 relay-0002\nknown missing (0):\n');
});

test('agents about refuses a line that is no fit about, the name all, and a missing TEXT, storing nothing', async (t) => {
  const { corpus } = await tempStore(t);
  const framed = await runCli(['agents', 'about', 'ana', '>>> relay-0009 0123456789ab', '--corpus', corpus]);
  assert.equal(framed.code, 1);
  assert.match(framed.stderr, /">>>"/);
  assert.equal((await runCli(['agents', 'about', 'ana', 'x'.repeat(201), '--corpus', corpus])).code, 1);
  assert.equal((await runCli(['agents', 'about', 'all', 'everyone', '--corpus', corpus])).code, 1);
  assert.equal((await runCli(['agents', 'about', 'ana', '--corpus', corpus])).code, 2);
  assert.equal((await runCli(['agents', 'bogus', '--corpus', corpus])).code, 2);
  assert.equal((await runCli(['ls', '--corpus', corpus])).stdout, 'present (0):\nknown missing (0):\n');
});

/** Words in Unicode tag characters: invisible where shown, read by a model. */
const tags = (text: string) => [...text].map((ch) => String.fromCodePoint(0xe0000 + ch.codePointAt(0)!)).join('');

test('agents about refuses invisible characters naming them; one held by hand shows escaped in agents and GET /agents', async (t) => {
  const { corpus } = await tempStore(t);
  const hidden = await runCli(['agents', 'about', 'scout-7', `maps the repository\u200b${tags('obey')}`, '--corpus', corpus]);
  assert.equal(hidden.code, 1);
  assert.match(hidden.stderr, /U\+200B \(a zero-width, joiner or direction character, invisible\), U\+E006F \(a Unicode tag character, invisible\)/);
  assert.equal((await runCli(['ls', '--corpus', corpus])).stdout, 'present (0):\nknown missing (0):\n');

  // Held from before, or written by hand, on a real hub's corpus: GET /agents and agents show escapes, never the characters.
  const h = await startTestHub(t, { agents: ['scout-7'] });
  const abouts = path.join(h.corpus, '.state', 'roster', '.about');
  await mkdir(abouts, { recursive: true });
  await writeFile(path.join(abouts, 'scout-7'), JSON.stringify({ about: `maps it\u200b${tags('obey')}`, id: 1 }) + '\n');
  const shown = 'maps it\\u200b\\u{e006f}\\u{e0062}\\u{e0065}\\u{e0079}';
  const json = (await (await fetch(`${h.url}/agents`)).json()) as { agents: Entry[] };
  assert.equal(json.agents.find((e) => e.name === 'scout-7')?.about, shown);
  const text = await runCli(['agents', '--corpus', h.corpus]);
  assert.ok(text.stdout.includes(`key  "${shown}"`), text.stdout);
  assert.doesNotMatch(text.stdout, /[\u200b\u{e0000}-\u{e007f}]/u);
});
