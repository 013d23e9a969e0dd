/** The CLI as an operator runs it: the real bin/p-e-relay, child processes, real files. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { access, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { buildRecordFile, digestOf, splitRecordFile } from '../../lib/model/deposit.js';
import { corpusPaths } from '../../lib/disk/paths.js';
import { BIN, killed, record, runCli, tempDir, tempStore } from '../support/helpers.js';
import { spawnHub } from '../support/hub-process.js';
import { said } from '../support/poll.js';

const USER = { USER: 'alice', LOGNAME: 'alice' };

/** The store's corpus option, spelled as a user would. */
const at = (corpus: string) => ['--corpus', corpus];

async function append(corpus: string, text: string, extra: string[] = []): Promise<string> {
  const result = await runCli(['append', ...at(corpus), ...extra], { input: text, env: USER });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim();
}

// ---- init -------------------------------------------------------------------------------

test('init creates the corpus and keys directories with their git files', async (t) => {
  const dir = await tempDir(t);
  const result = await runCli(['init', '--corpus', path.join(dir, 'corpus'), '--keys', path.join(dir, 'keys')]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /store ready at .*corpus \(ids of 4 digits\)/);
  assert.equal(await readFile(path.join(dir, 'corpus', '.gitattributes'), 'utf8'), '# Records are stored byte for byte; git must never convert line endings.\n* -text\n');
  assert.match(await readFile(path.join(dir, 'corpus', '.gitignore'), 'utf8'), /^\.state\/$/m);
  assert.match(await readFile(path.join(dir, 'keys', '.gitignore'), 'utf8'), /^\*\.key$/m);
  const again = await runCli(['init', '--corpus', path.join(dir, 'corpus'), '--keys', path.join(dir, 'keys')]);
  assert.equal(again.code, 0, 'init is safe to run again');
});

test('init --corpus X without --keys puts the keys beside X, not in the working directory; keys add and the hub find them there', async (t) => {
  const dir = await tempDir(t);
  const elsewhere = await tempDir(t);
  const corpus = path.join(dir, 'corpus');
  const made = await runCli(['init', '--corpus', corpus], { cwd: elsewhere });
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, new RegExp(`keys in ${path.join(dir, 'keys')}`));
  assert.deepEqual(await readdir(elsewhere), [], 'nothing in the working directory');
  const added = await runCli(['keys', 'add', 'scout-7', '--corpus', corpus], { cwd: elsewhere });
  assert.equal(added.code, 0, added.stderr);
  assert.deepEqual((await readdir(path.join(dir, 'keys'))).filter((f) => f.endsWith('.key')), ['scout-7.key']);
  const hub = await spawnHub({ corpus, keys: path.join(dir, 'keys'), argv: [BIN, 'serve', '--http', '--port', '0', '--corpus', corpus], cwd: elsewhere, env: { P_E_RELAY_LOG: 'info' }, until: 'scanned', cleanup: t });
  assert.match(hub.stderr(), new RegExp(`keys: 1 in ${path.join(dir, 'keys')} \\(scout-7\\)`));
});

test('keys add --keys DIR beside a store ./corpus leaves its roster alone; its own keys, --corpus or P_E_RELAY_CORPUS put the name on it', async (t) => {
  const { dir, corpus } = await tempStore(t);
  const otherKeys = path.join(await tempDir(t), 'keys');
  const roster = async () => (await runCli(['agents', '--json', ...at(corpus)])).stdout;
  const add = async (name: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const result = await runCli(['keys', 'add', name, ...args], { cwd: dir, env });
    assert.equal(result.code, 0, result.stderr);
  };
  await add('stranger', ['--keys', otherKeys]);
  assert.doesNotMatch(await roster(), /stranger/, 'a key made for another hub is not on this corpus\'s roster');
  await add('own-key', []);
  await add('named', ['--keys', otherKeys, '--corpus', corpus]);
  await add('by-env', ['--keys', otherKeys], { P_E_RELAY_CORPUS: corpus });
  const names = (JSON.parse(await roster()) as { agents: { name: string }[] }).agents.map((a) => a.name);
  assert.deepEqual(names.sort(), ['by-env', 'named', 'own-key']);
});

test('init --id-width 6 makes a store of six-digit ids, fixed for its life', async (t) => {
  const dir = await tempDir(t);
  const corpus = path.join(dir, 'corpus');
  const result = await runCli(['init', '--id-width', '6', ...at(corpus), '--keys', path.join(dir, 'keys')]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /ids of 6 digits/);
  assert.equal(await append(corpus, record()), 'relay-000001');
  const change = await runCli(['init', '--id-width', '5', ...at(corpus), '--keys', path.join(dir, 'keys')]);
  assert.equal(change.code, 1, 'the width of an existing store cannot change');
  assert.match(change.stderr, /width/);
});

test('init refuses an id width outside 4…9 as bad usage', async (t) => {
  const dir = await tempDir(t);
  for (const width of ['3', '10', 'six']) {
    const result = await runCli(['init', '--id-width', width, ...at(path.join(dir, 'corpus'))]);
    assert.equal(result.code, 2, `--id-width ${width}`);
  }
});

// ---- append -------------------------------------------------------------------------------

test('append from stdin prints the id and deposits as cli/<user>, as-received', async (t) => {
  const { corpus } = await tempStore(t);
  const bytes = record({ kind: 'note' }, 'from stdin');
  assert.equal(await append(corpus, bytes), 'relay-0001');
  const { deposit, record: stored } = splitRecordFile(await readFile(path.join(corpus, 'relay-0001')));
  assert.equal(deposit.depositedBy, 'cli/alice');
  assert.equal(deposit.provenance, 'as-received');
  assert.equal(stored.toString(), bytes);
});

test('append FILE deposits the file byte for byte; - means stdin', async (t) => {
  const { corpus, dir } = await tempStore(t);
  const file = path.join(dir, 'message.txt');
  const bytes = Buffer.from('@p-e/x0\r\nkind: note\r\n\r\nCRLF, no final newline');
  await writeFile(file, bytes);
  const result = await runCli(['append', ...at(corpus), file], { env: USER });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, 'relay-0001\n');
  assert.deepEqual(splitRecordFile(await readFile(path.join(corpus, 'relay-0001'))).record, bytes);
  assert.equal(await append(corpus, record(), ['-']), 'relay-0002');
});

test('append --authored records provenance authored', async (t) => {
  const { corpus } = await tempStore(t);
  const id = await append(corpus, record(), ['--authored']);
  const { deposit } = splitRecordFile(await readFile(path.join(corpus, id)));
  assert.deepEqual([deposit.provenance, deposit.depositedBy], ['authored', 'cli/alice']);
});

test('append --id proposes an id; refusals exit 1 with the sentence', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({ parent: 'relay-0050' }));
  assert.equal(await append(corpus, record(), ['--id', 'relay-0002']), 'relay-0002');
  const ahead = await runCli(['append', ...at(corpus), '--id', 'relay-0050'], { input: record() });
  assert.equal(ahead.code, 1, 'a cited id above the high-water mark is ahead like any other (spec §8c)');
  assert.match(ahead.stderr, /relay-0003/, 'names the next free id');
  const malformed = await runCli(['append', ...at(corpus), '--id', 'relay-33'], { input: record() });
  assert.equal(malformed.code, 1);
  assert.match(malformed.stderr, /relay-0033/, 'shows the expected shape');
  const bad = await runCli(['append', ...at(corpus)], { input: 'no first line' });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /@p-e\/x0/);
  assert.equal(bad.stdout, '');
});

test('append of a FILE that does not exist exits 1', async (t) => {
  const { corpus, dir } = await tempStore(t);
  const result = await runCli(['append', ...at(corpus), path.join(dir, 'nope.txt')]);
  assert.equal(result.code, 1);
});

// ---- reads -----------------------------------------------------------------------------

test('get prints the exact bytes of the file, even a large multi-byte record', async (t) => {
  const { corpus } = await tempStore(t);
  const id = await append(corpus, record({ kind: 'big' }, 'ünïcødé 🦊 '.repeat(20_000)));
  const result = await runCli(['get', ...at(corpus), id]);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(Buffer.from(result.stdout), await readFile(path.join(corpus, id)));
});

test('get refuses an absent or damaged record with exit 1, naming its state', async (t) => {
  const { corpus } = await tempStore(t);
  const id = await append(corpus, record({ parent: 'relay-0007' }, 'original'));
  const missing = await runCli(['get', ...at(corpus), 'relay-0007']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /KNOWN_MISSING/);
  assert.equal(missing.stdout, '');
  const unknown = await runCli(['get', ...at(corpus), 'relay-33']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /UNKNOWN/);
  await tamper(corpus, id);
  const damaged = await runCli(['get', ...at(corpus), id]);
  assert.equal(damaged.code, 1);
  assert.match(damaged.stderr, /damaged/);
  assert.equal(damaged.stdout, '');
});

test('exists prints one line for each state and exits 0; a malformed id is UNKNOWN', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({ ref: 'relay-0033' }));
  for (const [id, state] of [['relay-0001', 'PRESENT'], ['relay-0033', 'KNOWN_MISSING'], ['relay-0002', 'UNKNOWN'], ['RELAY-0001', 'UNKNOWN'], ['../x', 'UNKNOWN']]) {
    const result = await runCli(['exists', ...at(corpus), id!]);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, `${id} ${state}\n`);
  }
});

test('ls prints the two lines; --after filters; a malformed --after is refused', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({ ref: 'relay-0003 relay-0004' }));
  await append(corpus, record());
  assert.equal((await runCli(['ls', ...at(corpus)])).stdout, 'present (2): relay-0001 relay-0002\nknown missing (2): relay-0003 relay-0004\n');
  assert.equal((await runCli(['ls', ...at(corpus), '--after', 'relay-0001'])).stdout, 'present (1): relay-0002\nknown missing (2): relay-0003 relay-0004\n');
  assert.equal((await runCli(['ls', ...at(corpus), '--after', 'relay-0003'])).stdout, 'present (0):\nknown missing (1): relay-0004\n');
  assert.equal((await runCli(['ls', ...at(corpus), '--after', 'relay-0005'])).code, 1, 'past every id held, issued or cited, the mark is ahead');
  assert.equal((await runCli(['ls', ...at(corpus), '--after', 'relay-0000'])).stdout.split('\n')[0], 'present (2): relay-0001 relay-0002');
  const bad = await runCli(['ls', ...at(corpus), '--after', 'relay-2']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /relay-0000/);
});

test('replies prints the records naming an id, one level, in id order', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({ kind: 'question' }));
  await append(corpus, record({ kind: 'reply', from: 'b', parent: 'relay-0001' }));
  await append(corpus, record({ kind: 'reply', parent: 'relay-0002' }));
  await append(corpus, record({ kind: 'note', ref: 'relay-0001' }));
  const result = await runCli(['replies', ...at(corpus), 'relay-0001']);
  assert.equal(result.code, 0);
  assert.equal(result.stdout, 'replies to relay-0001 (2):\nrelay-0002 (kind reply, from b, parent relay-0001) deposited-by cli/alice\nrelay-0004 (kind note, refs relay-0001) deposited-by cli/alice\n');
});

// ---- waiting and following ------------------------------------------------------------------

test('wait --after returns at once (exit 0) when a newer record is held', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({ kind: 'a' }));
  const result = await runCli(['wait', ...at(corpus), '--after', 'relay-0000', '--timeout', '20000']);
  assert.equal(result.code, 0);
  assert.match(result.stdout, /^1 appeared after \d+ ms:\nrelay-0001 \(kind a\) deposited-by cli\/alice, as-received\ncursor: relay-0001 \(to read on from there, pass it as after\)\n$/);
});

test('wait --timeout 0 only looks: with nothing new it says so, not that it timed out, and exits 3', async (t) => {
  const { corpus } = await tempStore(t);
  const result = await runCli(['wait', ...at(corpus), '--timeout', '0']);
  assert.equal(result.code, 3);
  assert.equal(result.stdout, 'nothing new (looked without waiting)\ncursor: relay-0000 (to read on from there, pass it as after)\n');
});

test('wait exits 3 when the time runs out, so a script tells it from a refusal (1)', async (t) => {
  const { corpus } = await tempStore(t);
  const result = await runCli(['wait', ...at(corpus), '--timeout', '100']);
  assert.equal(result.code, 3);
  assert.match(result.stdout, /timed out/);
  const refused = await runCli(['wait', ...at(corpus), '--after', 'relay-0042', '--timeout', '100']);
  assert.equal(refused.code, 1, refused.stderr);
});

test('wait without --after is woken by an append from another process', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({ kind: 'old' }));
  const waiting = runCli(['wait', ...at(corpus), '--timeout', '20000']);
  // Keep appending until the waiter, once it is up, sees one: there is no
  // signal from outside that its watcher has started.
  let result: Awaited<typeof waiting> | undefined;
  void waiting.then((r) => (result = r));
  while (result === undefined) {
    await append(corpus, record({ kind: 'new' }));
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /appeared after .*\nrelay-\d{4} \(kind new\)/);
  assert.doesNotMatch(result.stdout, /kind old/);
});

test('tail prints the newest records; -n picks how many', async (t) => {
  const { corpus } = await tempStore(t);
  for (const kind of ['a', 'b', 'c']) await append(corpus, record({ kind }));
  const all = await runCli(['tail', ...at(corpus)]);
  assert.equal(all.code, 0);
  assert.deepEqual(all.stdout.trim().split('\n').map((l) => l.slice(0, 10)), ['relay-0001', 'relay-0002', 'relay-0003']);
  const two = await runCli(['tail', ...at(corpus), '-n', '2']);
  assert.equal(two.stdout, 'relay-0002 (kind b) deposited-by cli/alice, as-received\nrelay-0003 (kind c) deposited-by cli/alice, as-received\n');
});

test('tail -f follows records as they land, until interrupted', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({ kind: 'before' }));
  const child = spawn(process.execPath, [BIN, 'tail', '-f', ...at(corpus)], { env: { ...process.env, ...USER } });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  const printed = (pattern: RegExp) => said(child.stdout, () => out, pattern, `tail -f to print ${pattern}`);
  await printed(/relay-0001 \(kind before\)/); // the store is open and watching
  await append(corpus, record({ kind: 'after' }));
  await printed(/relay-0002 \(kind after\)/);
  child.kill('SIGINT');
  await killed(child);
  assert.equal(child.exitCode, 0);
});

// ---- verify -----------------------------------------------------------------------------

/** Replaces a record the way an editor saves, changing one word of its body. */
async function tamper(corpus: string, id: string): Promise<void> {
  const file = path.join(corpus, id);
  await writeFile(`${file}.new`, (await readFile(file, 'utf8')).replace('original', 'tampered'));
  await rename(`${file}.new`, file);
}

/** A pid that is certainly not running any more. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await killed(child);
  return child.pid!;
}

test('verify exits 0 on a whole corpus', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record());
  await append(corpus, record());
  const result = await runCli(['verify', ...at(corpus)]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /^2 records checked, 0 damaged/m);
});

test('verify exits 1 naming a damaged record', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record({}, 'fine'));
  const id = await append(corpus, record({}, 'original'));
  await tamper(corpus, id);
  const result = await runCli(['verify', ...at(corpus)]);
  assert.equal(result.code, 1);
  assert.match(result.stdout, /^damaged relay-0002: .*digest/m);
  assert.doesNotMatch(result.stdout, /relay-0001/);
  assert.match(result.stdout, /2 records checked, 1 damaged/);
});

/** `n` records written straight to disk as an append writes them (thousands in well under a second). */
async function writeRecords(corpus: string, n: number): Promise<void> {
  for (let i = 1; i <= n; i++) {
    const bytes = Buffer.from(record({}, i === n ? 'original' : `record ${i}`));
    const deposit = { provenance: 'as-received' as const, depositedBy: 'test', depositedAt: new Date(0).toISOString(), digest: digestOf(bytes) };
    writeFileSync(path.join(corpus, `relay-${String(i).padStart(4, '0')}`), buildRecordFile(deposit, bytes)); // synchronously: a thread-pool round trip each saved
  }
}

test('verify prints its progress on stderr as whole lines, the last one counting every record', async (t) => {
  const { corpus } = await tempStore(t);
  await writeRecords(corpus, 4_500);
  const result = await runCli(['verify', ...at(corpus)]);
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /\r/, 'lines, not a carriage-return spinner');
  const progress = result.stderr.split('\n').filter((line) => line.startsWith('verified '));
  assert.ok(progress.length >= 1);
  for (const line of progress) assert.match(line, /^verified \d+\/4500 records \(\d+%\)$/);
  assert.equal(progress.at(-1), 'verified 4500/4500 records (100%)');
  assert.doesNotMatch(result.stdout, /verified/, 'stdout holds the findings only');
});

test('verify names a damaged record that lies past its first batch of reads', async (t) => {
  const { corpus } = await tempStore(t);
  await writeRecords(corpus, 4_500);
  await tamper(corpus, 'relay-4500');
  const result = await runCli(['verify', ...at(corpus)]);
  assert.equal(result.code, 1);
  assert.match(result.stdout, /^damaged relay-4500: .*digest/m);
  assert.match(result.stdout, /^4500 records checked, 1 damaged/m);
});

test('verify warns of stray temp files; --clean removes those whose owner is dead, never a live one', async (t) => {
  const { corpus } = await tempStore(t);
  await append(corpus, record());
  const tmp = corpusPaths(corpus).tmp;
  const stray = `${await deadPid()}-abc123-0.tmp`;
  const live = `${process.pid}-abc123-1.tmp`; // this test runner: alive
  await mkdir(tmp, { recursive: true });
  await writeFile(path.join(tmp, stray), 'half a record');
  await writeFile(path.join(tmp, live), 'being written');

  const report = await runCli(['verify', ...at(corpus)]);
  assert.equal(report.code, 0, 'stray temp files are normal after a crash: a warning, not a failure');
  assert.match(report.stderr, new RegExp(`warn: stray temp file \\.state/tmp/${stray}`));
  assert.doesNotMatch(report.stderr, new RegExp(`stray temp file \\.state/tmp/${live}`));
  assert.match(report.stdout, /1 stray temp files/);
  await access(path.join(tmp, stray)); // without --clean nothing is removed

  const clean = await runCli(['verify', '--clean', ...at(corpus)]);
  assert.equal(clean.code, 0);
  assert.deepEqual(await readdir(tmp), [live]);
});

// ---- usage ---------------------------------------------------------------------------------

test('every command answers --help with exit 0', async () => {
  const main = await runCli(['--help']);
  assert.equal(main.code, 0);
  const commands = [...main.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]!);
  for (const required of ['init', 'serve', 'append', 'get', 'exists', 'ls', 'replies', 'wait', 'tail', 'verify']) assert.ok(commands.includes(required), required);
  const results = await Promise.all(commands.map((command) => runCli([command, '--help'])));
  results.forEach((result, i) => {
    assert.equal(result.code, 0, `${commands[i]} --help: ${result.stderr}`);
    assert.match(result.stdout, /Usage: p-e-relay/, `${commands[i]} --help`);
  });
});

test('the main help lists the command table, and each entry loads the command its usage names', async () => {
  const { COMMANDS } = await import('../../lib/cli/commands.js');
  const main = await runCli(['--help']);
  const listed = [...main.stdout.matchAll(/^ {2}([a-z]+) {2,}(.*)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(listed, COMMANDS.map((c) => `${c.name} ${c.summary}`));
  for (const entry of COMMANDS) assert.match((await entry.load()).help, new RegExp(`^Usage: p-e-relay ${entry.name}\\b`), entry.name);
});

test('each command\'s Usage lines name every option it takes (filters as [filters]; serve\'s many as [options])', async () => {
  const { COMMANDS } = await import('../../lib/cli/commands.js');
  const { FILTER_OPTIONS } = await import('../../lib/cli/filter-options.js');
  for (const entry of COMMANDS) {
    const command = await entry.load();
    const usage = command.help.slice(0, command.help.indexOf('\n\n'));
    if (usage.includes('[options]')) continue;
    for (const [name, spec] of Object.entries(command.options ?? {})) {
      const named = usage.includes(`--${name}`) || (spec.short !== undefined && usage.includes(`-${spec.short}`)) || (name in FILTER_OPTIONS && usage.includes('[filters]'));
      assert.ok(named, `${entry.name}'s usage leaves out --${name}:\n${usage}`);
    }
  }
});

test('the main help lists --version, which prints the version', async () => {
  const { VERSION } = await import('../../lib/version.js');
  assert.match((await runCli(['--help'])).stdout, /^ +p-e-relay -v\|--version +print the version$/m);
  for (const flag of ['--version', '-v']) assert.equal((await runCli([flag])).stdout, `${VERSION}\n`);
});

test('bridge --help offers no --corpus and gives the --keys default once; without --keys it looks in ./keys, whatever P_E_RELAY_CORPUS says', async (t) => {
  const help = (await runCli(['bridge', '--help'])).stdout;
  assert.doesNotMatch(help, /--corpus/);
  assert.equal(help.match(/^ +--keys /gm)?.length, 1, help);
  assert.match(help, /--keys DIR +where A\.key is \(env P_E_RELAY_KEYS, default \.\/keys\)/);
  const cwd = await tempDir(t);
  // Its input closed, the bridge starts, warns about the key file it will read, and exits.
  const run = await runCli(['bridge', '--url', 'http://127.0.0.1:1', '--agent', 'ana'], { cwd, env: { P_E_RELAY_CORPUS: path.join(cwd, 'elsewhere', 'corpus'), P_E_RELAY_KEYS: '' } });
  assert.match(run.stderr, new RegExp(`no key file at ${path.join(cwd, 'keys', 'ana.key').replaceAll('.', '\\.')} yet`), run.stderr);
});

test('bad usage exits 2 with a sentence on stderr', async (t) => {
  const { corpus } = await tempStore(t);
  const cases = [
    [],
    ['frobnicate'],
    ['ls', '--bogus', ...at(corpus)],
    ['get', ...at(corpus)],
    ['get', ...at(corpus), 'relay-0001', 'relay-0002'],
    ['exists', ...at(corpus)],
    ['wait', ...at(corpus), '--timeout', 'soon'],
    ['tail', ...at(corpus), '-n', 'x'],
    ['ls', ...at(corpus), 'extra'],
    ['append', ...at(corpus), 'a.txt', 'b.txt'],
  ];
  for (const args of cases) {
    const result = await runCli(args);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    if (args.length > 0) assert.ok(result.stderr.length > 0, `${args.join(' ')} says why`);
  }
});

test('P_E_RELAY_CORPUS names the corpus when --corpus is absent', async (t) => {
  const { corpus } = await tempStore(t);
  const env = { ...USER, P_E_RELAY_CORPUS: corpus };
  const appended = await runCli(['append'], { input: record(), env });
  assert.equal(appended.code, 0, appended.stderr);
  assert.equal((await runCli(['ls'], { env })).stdout, 'present (1): relay-0001\nknown missing (0):\n');
  assert.equal((await runCli(['exists', 'relay-0001'], { env })).stdout, 'relay-0001 PRESENT\n');
});

test('the corpus defaults to ./corpus, also when P_E_RELAY_CORPUS is empty', async (t) => {
  const { dir } = await tempStore(t);
  const result = await runCli(['append'], { cwd: dir, input: record(), env: { P_E_RELAY_CORPUS: '' } });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual((await readdir(path.join(dir, 'corpus'))).filter((n) => n.startsWith('relay-')), ['relay-0001']);
});

test('a corpus that does not exist is refused with exit 1, saying how to create one', async (t) => {
  const dir = await tempDir(t);
  const result = await runCli(['ls', ...at(path.join(dir, 'nowhere'))]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /p-e-relay init/);
});
