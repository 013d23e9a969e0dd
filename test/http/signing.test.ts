/**
 * The pieces of signing, one behaviour each: the HMAC against a known
 * vector and against the real openssl, header parsing, the skew window, the
 * one-time guard and its pruning, the append budget and the slot counts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { RelayError } from '../../lib/errors.js';
import { ReplayGuard } from '../../lib/auth/replay-guard.js';
import { checkFreshness, computeSignature, parseAuthorization } from '../../lib/auth/sign.js';
import { RateLimiter, Slots } from '../../lib/http/limits.js';
import { tempDir } from '../support/helpers.js';

const run = promisify(execFile);
const code = (fn: () => unknown) => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as RelayError).code;
  }
};

test('the signature matches a known vector', () => {
  const sig = computeSignature(Buffer.from('secret-key'), 'POST', '1700000000', Buffer.from('hello'));
  assert.equal(sig, '189fb40198d26ab045ded6cf589b0624fd0928ce32daa43342b475f53f7e44ce');
});

test('the signature is what openssl computes from the key file\'s text', async (t) => {
  const dir = await tempDir(t);
  const script = `printf 'GET\\n%s\\n%s' "$TS" "$(printf '' | openssl dgst -sha256 -r | cut -d' ' -f1)" | openssl dgst -sha256 -hmac "$KEY" -r | cut -d' ' -f1`;
  const { stdout } = await run('bash', ['-c', script], { cwd: dir, env: { ...process.env, TS: '1800000123', KEY: 'k3y with spaces' } });
  assert.equal(stdout.trim(), computeSignature(Buffer.from('k3y with spaces'), 'GET', '1800000123', Buffer.alloc(0)));
});

test('the Authorization header parses with free spacing and any case of the scheme', () => {
  const sig = 'a'.repeat(64);
  assert.deepEqual(parseAuthorization(`pe-hmac agent=scout-7,ts=1700000000 ,  sig=${sig}`), { agent: 'scout-7', ts: '1700000000', sig });
});

test('a header that is not exactly the three fields is malformed_authorization', () => {
  const sig = 'a'.repeat(64);
  for (const header of [
    `Basic agent=a, ts=1, sig=${sig}`,
    `PE-HMAC agent=a, ts=1`,
    `PE-HMAC agent=a, ts=1, sig=${sig.toUpperCase()}`,
    `PE-HMAC agent=a, ts=1, sig=${sig}0`,
    `PE-HMAC agent=a, ts=1.5, sig=${sig}`,
    `PE-HMAC agent=a, ts=-1, sig=${sig}`,
    `PE-HMAC agent=a, ts=1, sig=${sig}, nonce=x`,
    `PE-HMAC agent=.hidden, ts=1, sig=${sig}`,
    `PE-HMAC agent=${'x'.repeat(65)}, ts=1, sig=${sig}`,
  ]) {
    assert.equal(code(() => parseAuthorization(header)), 'malformed_authorization', header);
  }
});

test('a ts is fresh within 60 s either way, stale beyond', () => {
  const now = 1_800_000_000_000;
  assert.equal(code(() => checkFreshness('1800000060', now)), null);
  assert.equal(code(() => checkFreshness('1799999940', now)), null);
  assert.equal(code(() => checkFreshness('1800000061', now)), 'stale_timestamp');
  assert.equal(code(() => checkFreshness('1799999939', now)), 'stale_timestamp');
});

/** A guard directory as `init` makes it: memory from the start. */
async function guardDir(t: Parameters<typeof tempDir>[0]): Promise<string> {
  const dir = path.join(await tempDir(t), 'replay');
  await mkdir(dir);
  return dir;
}

test('the guard accepts a signature once, for every guard on the same directory', async (t) => {
  const dir = await guardDir(t);
  const one = new ReplayGuard(dir);
  const other = new ReplayGuard(dir);
  const sig = 'b'.repeat(64);
  assert.equal(await one.accept(sig, '1800000000'), true);
  assert.equal(await one.accept(sig, '1800000000'), false);
  assert.equal(await other.accept(sig, '1800000000'), false);
  assert.equal(await other.accept('c'.repeat(64), '1800000000'), true);
  const [bucket] = (await readdir(dir)).filter((name) => /^\d+$/.test(name));
  assert.ok(!(await readdir(path.join(dir, bucket!))).some((name) => name.includes(sig)), 'only a digest of the signature is on disk');
});

test('pruning drops a bucket only once none of its signatures could be replayed, 120 s after acceptance included', async (t) => {
  const dir = await guardDir(t);
  let nowMs = 1_800_000_000_000;
  const guard = new ReplayGuard(dir, { now: () => nowMs });
  await guard.accept('d'.repeat(64), '1800000000'); // accepted at ts, could have been accepted until ts+60
  nowMs += 179_000; // ts + 179 s: a signature of ts+59 in this bucket accepted at ts+119 is held until ts+239
  assert.equal(await guard.prune(), 0);
  assert.equal(await guard.accept('d'.repeat(64), '1800000000'), false);
  nowMs = 1_800_000_000_000 + 240_000;
  assert.equal(await guard.prune(), 1);
});

test('a guard whose directory was lost refuses, for 60 s, every signature it may have accepted before (guard_reset), then accepts again', async (t) => {
  const dir = await guardDir(t);
  let nowMs = 1_800_000_000_000;
  const guard = new ReplayGuard(dir, { now: () => nowMs });
  const captured = 'e'.repeat(64);
  assert.equal(await guard.accept(captured, '1800000000'), true);
  await rm(dir, { recursive: true }); // git clean -x
  nowMs += 5_000;
  const other = new ReplayGuard(dir, { now: () => nowMs }); // a hub started after the loss
  for (const g of [guard, other]) {
    const err = await g.accept(captured, '1800000000').then(() => null, (e: unknown) => e as RelayError);
    assert.equal(err?.code, 'guard_reset', 'the captured signature is not accepted again');
    assert.equal(err.details.safeFrom, 1_800_000_065);
  }
  assert.equal((await other.accept('f'.repeat(64), '1800000064').catch((e: RelayError) => e.code)), 'guard_reset', 'a fresh signature dated inside the window too');
  assert.equal(await other.accept('f'.repeat(64), '1800000065'), true, 'one dated after since + 60 s is safe');
});

test('one agent may have at most perAgentPerMinute signatures accepted per minute bucket; others are not affected', async (t) => {
  const dir = await guardDir(t);
  const guard = new ReplayGuard(dir, { now: () => 1_800_000_010_000, perAgentPerMinute: 3 });
  for (let i = 0; i < 3; i++) assert.equal(await guard.accept(String(i).repeat(64), '1800000010', 'mallory'), true);
  const err = await guard.accept('9'.repeat(64), '1800000010', 'mallory').then(() => null, (e: unknown) => e as RelayError);
  assert.equal(err?.code, 'too_many_signatures');
  assert.equal(err.details.retryAfterS, 50);
  assert.equal(await guard.accept('8'.repeat(64), '1800000010', 'bob'), true, 'another agent has its own budget');
  assert.equal(guard.heldFor('mallory'), 3);
});

test('the append budget allows a burst, then one per interval, and says how long to wait', () => {
  let now = 0;
  const limiter = new RateLimiter(2, 3, () => now);
  assert.deepEqual([limiter.take('a'), limiter.take('a'), limiter.take('a')], [0, 0, 0]);
  assert.equal(limiter.take('a'), 500);
  assert.equal(limiter.take('b'), 0, 'each agent has its own budget');
  now += 500;
  assert.equal(limiter.take('a'), 0);
});

test('slots are counted per agent and in all, and a release is safe twice', () => {
  const slots = new Slots(2, 3);
  const a1 = slots.acquire('a');
  const a2 = slots.acquire('a');
  assert.equal(slots.acquire('a'), 'agent');
  const b1 = slots.acquire('b');
  assert.equal(slots.acquire('c'), 'total');
  assert.ok(typeof a1 === 'function' && typeof a2 === 'function' && typeof b1 === 'function');
  a1();
  a1();
  assert.equal(slots.active, 2);
  assert.equal(typeof slots.acquire('c'), 'function');
});
