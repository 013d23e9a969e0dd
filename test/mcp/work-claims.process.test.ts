/**
 * Work claims on every door (spec §8e): named stdio servers claim, collide
 * and release through append_relay and see who holds what with list_relays
 * kind claim; a real hub on loopback answers GET /claims and its signed
 * agents claim over /mcp; the CLI lists and releases; the git guard, as a
 * real repository's pre-commit hook, refuses a commit into another
 * agent's claimed path. Real SDK clients over real pipes and HTTP.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { BIN, errorCode, record, runCli, stdioClient, tempDir, tempStore, textOf } from '../support/helpers.js';
import { httpClient, startTestHub } from '../support/http-helpers.js';

const claimRecord = (targets: string, extra: Record<string, string> = {}) => record({ kind: 'claim', claim: targets, ...extra }, '');
const appendArgs = (bytes: string) => ({ name: 'append_relay', arguments: { bytes } });
const idOf = (r: unknown) => ((r as CallToolResult).structuredContent as { id: string }).id;
const git = (cwd: string, ...args: string[]) => promisify(execFile)('git', args, { cwd });

test('named stdio agents: claim, collide with a sentence naming the holder, see who holds what, release', async (t) => {
  const { corpus } = await tempStore(t);
  const [ana, bob] = await Promise.all([stdioClient(t, corpus, ['--agent', 'ana']), stdioClient(t, corpus, ['--agent', 'bob'])]);
  const got = await ana.client.callTool(appendArgs(claimRecord('task:fix-login path:src/auth/**', { for: '30m' })));
  assert.ok(!(got as CallToolResult).isError, textOf(got));
  const id = idOf(got);

  const refused = await bob.client.callTool(appendArgs(claimRecord('path:src/auth/login.ts')));
  assert.equal(errorCode(refused), 'claimed');
  assert.match(textOf(refused), new RegExp(`^claimed: .*path:src/auth/login\\.ts collides with path:src/auth/\\*\\* held by ana \\(${id}, lapses `));

  const listing = textOf(await bob.client.callTool({ name: 'list_relays', arguments: { kind: 'claim' } }));
  assert.match(listing, new RegExp(`^present \\(1\\): ${id}\nknown missing \\(0\\):\nlive claims \\(1\\):\n${id} ana until \\S+: task:fix-login path:src/auth/\\*\\*$`));

  assert.equal(errorCode(await bob.client.callTool(appendArgs(record({ kind: 'release', parent: id }, '')))), 'not_holder');
  await ana.client.callTool(appendArgs(record({ kind: 'done', parent: id }, 'fixed')));
  assert.equal(errorCode(await bob.client.callTool(appendArgs(claimRecord('task:fix-login')))), 'done');
  assert.ok(!((await bob.client.callTool(appendArgs(claimRecord('path:src/auth/login.ts')))) as CallToolResult).isError);
});

test('an unnamed stdio server cannot claim: agent_required', async (t) => {
  const { corpus } = await tempStore(t);
  const { client } = await stdioClient(t, corpus);
  assert.equal(errorCode(await client.callTool(appendArgs(claimRecord('task:t1')))), 'agent_required');
});

test('a hub: signed agents claim over /mcp, GET /claims lists the live ones, the CLI lists and releases them', async (t) => {
  const hub = await startTestHub(t, { agents: ['ana', 'bob'] });
  const ana = await httpClient(t, hub.url, { agent: 'ana', key: await hub.key('ana') });
  const bob = await httpClient(t, hub.url, { agent: 'bob', key: await hub.key('bob') });
  const id = idOf(await ana.callTool(appendArgs(claimRecord('task:t1'))));
  assert.equal(errorCode(await bob.callTool(appendArgs(claimRecord('task:t1')))), 'claimed');

  const answer = (await (await fetch(`${hub.url}/claims`)).json()) as { claims: { id: string; holder: string; targets: string[] }[] };
  assert.deepEqual(answer.claims.map((c) => [c.id, c.holder, c.targets]), [[id, 'ana', ['task:t1']]]);

  const listed = await runCli(['claims', '--corpus', hub.corpus]);
  assert.match(listed.stdout, new RegExp(`^live claims \\(1\\):\n${id} ana until \\S+: task:t1\n$`));
  const released = await runCli(['claims', 'release', id, '--corpus', hub.corpus]);
  assert.equal(released.code, 0, released.stderr);
  assert.deepEqual(((await (await fetch(`${hub.url}/claims`)).json()) as { claims: unknown[] }).claims, []);
  assert.ok(!((await bob.callTool(appendArgs(claimRecord('task:t1')))) as CallToolResult).isError);
  const json = JSON.parse((await runCli(['claims', '--json', '--corpus', hub.corpus])).stdout) as { claims: { holder: string }[] };
  assert.deepEqual(json.claims.map((c) => c.holder), ['bob']);
});

test('the git guard as a real pre-commit hook: refuses a commit into another agent\'s claim, lets the rest through, --no-verify skips it', async (t) => {
  const { corpus } = await tempStore(t);
  const hub = await startTestHub(t, { agents: ['ana'] }); // the same check through --url
  const repo = await tempDir(t, 'pe-relay-repo-');
  await git(repo, 'init', '-q');
  await git(repo, 'config', 'user.email', 'bob@example.invalid');
  await git(repo, 'config', 'user.name', 'bob');
  await git(repo, 'config', 'commit.gpgsign', 'false');
  const hook = path.join(repo, '.git', 'hooks', 'pre-commit');
  const install = async (where: string[]) => {
    await writeFile(hook, `#!/bin/sh\nexec "${process.execPath}" "${BIN}" guard --agent bob ${where.join(' ')}\n`);
    await chmod(hook, 0o755);
  };
  await install(['--corpus', corpus]);

  const { client: ana } = await stdioClient(t, corpus, ['--agent', 'ana']);
  const claimId = idOf(await ana.callTool(appendArgs(claimRecord('path:src/api'))));
  await mkdir(path.join(repo, 'src', 'api'), { recursive: true });
  await writeFile(path.join(repo, 'src', 'api', 'users.ts'), 'export {};\n');
  await writeFile(path.join(repo, 'README.md'), 'hello\n');

  await git(repo, 'add', 'README.md');
  await git(repo, 'commit', '-q', '-m', 'A path no one claimed');

  await git(repo, 'add', 'src/api/users.ts');
  const refused = await git(repo, 'commit', '-q', '-m', 'Into ana\'s claim').then(() => null, (err: { code: number; stderr: string }) => err);
  assert.ok(refused, 'the commit was refused');
  assert.match(refused.stderr, new RegExp(`src/api/users\\.ts is under path:src/api held by ana \\(${claimId}\\) until \\S+`));
  assert.match(refused.stderr, /--no-verify/);

  // The holder's own claim never stops the holder.
  const own = await runCliIn(repo, ['guard', '--agent', 'ana', '--corpus', corpus]);
  assert.equal(own.code, 0, own.stderr);

  // --url reads a hub's GET /claims: a claim on the hub stops bob's commit too.
  const hubAna = await httpClient(t, hub.url, { agent: 'ana', key: await hub.key('ana') });
  await hubAna.callTool(appendArgs(claimRecord('path:src/**/*.ts')));
  const viaHub = await runCliIn(repo, ['guard', '--agent', 'bob', '--url', hub.url]);
  assert.equal(viaHub.code, 1);
  assert.match(viaHub.stderr, /src\/api\/users\.ts is under path:src\/\*\*\/\*\.ts held by ana/);

  // A guard that cannot read the claims lets nothing through, and says why; one without --agent is a usage error.
  const unreachable = await runCliIn(repo, ['guard', '--agent', 'bob', '--url', 'http://127.0.0.1:9']);
  assert.equal(unreachable.code, 1);
  assert.match(unreachable.stderr, /could not reach http:\/\/127\.0\.0\.1:9\/claims/);
  assert.equal((await runCliIn(repo, ['guard', '--corpus', corpus])).code, 2);

  await git(repo, 'commit', '-q', '--no-verify', '-m', 'A person may skip the hook');
});

test('the git guard sees both sides of a rename: moving a file out of another agent\'s claim is refused', async (t) => {
  const { corpus } = await tempStore(t);
  const repo = await tempDir(t, 'pe-relay-repo-');
  await git(repo, 'init', '-q');
  await git(repo, 'config', 'user.email', 'bob@example.invalid');
  await git(repo, 'config', 'user.name', 'bob');
  await git(repo, 'config', 'commit.gpgsign', 'false');
  await mkdir(path.join(repo, 'src', 'api'), { recursive: true });
  await writeFile(path.join(repo, 'src', 'api', 'users.ts'), 'export const users = [1, 2, 3];\n');
  await git(repo, 'add', '.');
  await git(repo, 'commit', '-q', '-m', 'Before any claim');

  const { client: ana } = await stdioClient(t, corpus, ['--agent', 'ana']);
  const claimId = idOf(await ana.callTool(appendArgs(claimRecord('path:src/api'))));
  await mkdir(path.join(repo, 'lib dir'), { recursive: true });
  await git(repo, 'mv', 'src/api/users.ts', 'lib dir/users.ts');

  const guard = await runCliIn(repo, ['guard', '--agent', 'bob', '--corpus', corpus]);
  assert.equal(guard.code, 1, guard.stderr);
  assert.match(guard.stderr, new RegExp(`src/api/users\\.ts is under path:src/api held by ana \\(${claimId}\\)`));
});

test('claims release refuses what is not a record id, naming it, and stores nothing', async (t) => {
  const { corpus } = await tempStore(t);
  for (const given of ['fix-login', 'relay-0001\nkind: claim']) {
    const got = await runCli(['claims', 'release', given, '--corpus', corpus]);
    assert.equal(got.code, 2, got.stderr);
    assert.match(got.stderr, /is not a record id of this corpus/);
  }
  assert.deepEqual((await readdir(corpus)).filter((n) => n.startsWith('relay-')), []);
});

async function runCliIn(cwd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [BIN, ...args], { cwd }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}
