import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_LIFE_MS,
  MAX_CLAIM_TARGETS,
  covers,
  parseClaimLife,
  parseClaimTargets,
  patternFault,
  pathUnder,
  pathsCollide,
  targetsCollide,
  workClaimOf,
} from '../../lib/model/work-claims.js';
import { refused } from '../support/refusal.js';

test('a claim: header gives its task and path targets, distinct, in order', () => {
  assert.deepEqual(parseClaimTargets('task:fix-login  path:src/auth/** task:fix-login'), [
    { type: 'task', id: 'fix-login' },
    { type: 'path', pattern: 'src/auth/**' },
  ]);
});

for (const [label, value] of [
  ['an absolute path', 'path:/etc/passwd'],
  ['a .. segment', 'path:../x'],
  ['a . segment', 'path:a/./b'],
  ['an empty path', 'path:'],
  ['an empty task', 'task:'],
  ['no targets at all', ''],
  ['a target of neither kind', 'file:x'],
  ['a 300-character pattern', `path:${'a/'.repeat(149)}ab`],
  ['a hostile globstar run of 300 characters', `path:${'**/'.repeat(100)}`],
  ['a task with a control character', 'task:fix\u0007it'],
  ['a task with a non-ASCII letter', 'task:fixé'],
  ['a claim of everything', 'path:**'],
  ['a claim of every root file', 'path:*'],
  ['** inside a segment', 'path:src/a**b'],
  ['an unclosed class', 'path:src/[ab'],
  ['a POSIX character class (read as [[:alpha:] then ], it would hold no file it names)', 'path:src/[[:alpha:]]x.ts'],
  ['a backslash', 'path:src\\x'],
  ['an empty segment', 'path:src//x'],
  ['a trailing slash', 'path:src/'],
  ['33 segments', `path:${'a/'.repeat(32)}b`],
  ['17 wildcards', `path:src/${'*a'.repeat(17)}`],
  [`${MAX_CLAIM_TARGETS + 1} targets`, Array.from({ length: MAX_CLAIM_TARGETS + 1 }, (_, i) => `task:t${i}`).join(' ')],
] as const) {
  test(`a claim with ${label} is refused bad_claim, naming it`, () => {
    const err = refused(() => parseClaimTargets(value), 'bad_claim');
    const first = value.split(' ')[0]!;
    if (first !== '' && !label.includes('targets')) assert.match(err.message, new RegExp(JSON.stringify(first.slice(0, 20)).slice(1, -1).replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')));
  });
}

test('a task with spaces is two targets, and the second is refused by its own name', () => {
  const err = refused(() => parseClaimTargets('task:fix it'), 'bad_claim');
  assert.match(err.message, /"it"/);
});

test('for: takes 10 s to 24 h in s, m or h; absent is 1 h', () => {
  assert.equal(parseClaimLife(undefined), DEFAULT_LIFE_MS);
  assert.equal(parseClaimLife('10s'), 10_000);
  assert.equal(parseClaimLife('30m'), 1_800_000);
  assert.equal(parseClaimLife('24h'), 86_400_000);
  for (const bad of ['0s', '9s', '99h', '25h', 'soon', '1d', '-5m', '1.5h']) refused(() => parseClaimLife(bad), 'bad_claim');
});

test('a claim record text gives its targets and life', () => {
  const claim = workClaimOf('@p-e/x0\nkind: claim\nfrom: ana\nclaim: task:t1 path:src/x.ts\nfor: 15m\n\nclaim: task:not-a-header');
  assert.deepEqual(claim, { targets: [{ type: 'task', id: 't1' }, { type: 'path', pattern: 'src/x.ts' }], lifeMs: 900_000 });
});

test('task targets collide only when equal, and never with a path', () => {
  assert.ok(targetsCollide({ type: 'task', id: 'a' }, { type: 'task', id: 'a' }));
  assert.ok(!targetsCollide({ type: 'task', id: 'a' }, { type: 'task', id: 'A' }));
  assert.ok(!targetsCollide({ type: 'task', id: 'a' }, { type: 'path', pattern: 'a' }));
});

test('src/api, src/api/** and src/api/x.ts all collide with each other', () => {
  const all = ['src/api', 'src/api/**', 'src/api/x.ts'];
  for (const a of all) for (const b of all) assert.ok(pathsCollide(a, b), `${a} ~ ${b}`);
});

for (const [a, b] of [
  ['src/*.ts', 'src/x.ts'],
  ['src/**/x.ts', 'src/a/b/x.ts'],
  ['src/**/x.ts', 'src/x.ts'],
  ['**/x.ts', 'lib/x.ts'],
  ['src/[ab].ts', 'src/a.ts'],
  ['src/?.ts', 'src/b.ts'],
  ['src/*', 'src/api/deep/file.ts'],
  ['src/*.ts', 'src/*.ts'],
  ['docs/[!x]*.md', 'docs/a.md'],
  // Neither matches the other read literally, yet one path matches both (src/a.ts, src/x.ts, src/b.ts).
  ['src/*.ts', 'src/a*'],
  ['**/*.ts', 'src/**'],
  ['src/*/x.ts', 'src/a*/**'],
  ['src/[a-c].ts', 'src/?.ts'],
  ['src/[!a]*', 'src/[ab]*'],
] as const) {
  test(`${a} collides with ${b}`, () => {
    assert.ok(pathsCollide(a, b));
    assert.ok(pathsCollide(b, a));
  });
}

for (const [a, b] of [
  ['src/api', 'src/apix'],
  ['src/*.ts', 'src/a/x.ts'],
  ['src/*.ts', 'lib/x.ts'],
  ['src/[ab].ts', 'src/c.ts'],
  ['docs/[!x]*.md', 'docs/x.md'],
  ['src/api/x.ts', 'src/api/y.ts'],
  ['a/b', 'b'],
  ['src/*.ts', 'src/a*.js'],
  ['src/[ab].ts', 'src/[cd].ts'],
  ['src/[!a].ts', 'src/a.ts'],
] as const) {
  test(`${a} does not collide with ${b}`, () => {
    assert.ok(!pathsCollide(a, b));
    assert.ok(!pathsCollide(b, a));
  });
}

test('a staged path is under a directory claim, a glob claim and an exact claim, and not under a neighbour', () => {
  assert.ok(pathUnder('src/api', 'src/api/x.ts'));
  assert.ok(pathUnder('src/api/**', 'src/api/x/y.ts'));
  assert.ok(pathUnder('src/**/*.ts', 'src/a/b.ts'));
  assert.ok(pathUnder('README.md', 'README.md'));
  assert.ok(!pathUnder('src/api', 'src/apix.ts'));
  assert.ok(!pathUnder('src/*.ts', 'src/a/b.js'));
});

test('a hostile pattern against a hostile path costs bounded time', () => {
  const patterns = [`${'*a'.repeat(16)}b`, `${'**/'.repeat(16)}x`, `${'**/a/'.repeat(8)}b`, `${'*/'.repeat(7)}**/${'*/'.repeat(7)}x`, `*${'/a'.repeat(30)}*`, '[a-z]'.repeat(16), `*${'a'.repeat(250)}*`];
  for (const p of patterns) assert.equal(patternFault(p), null, p); // the worst a claim may hold
  const paths = ['a'.repeat(256), `${'a/'.repeat(127)}c`, `${'a/'.repeat(2000)}c`];
  const started = process.hrtime.bigint();
  for (const p of patterns) for (const q of paths) covers(p, q);
  for (const p of patterns) for (const q of patterns) pathsCollide(p, q);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  assert.ok(ms < 1000, `${ms} ms`); // picomatch took 56 s for a pattern of eight '*a' against sixty 'a'
});
