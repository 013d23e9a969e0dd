/**
 * What a filesystem's error becomes when it reaches a caller
 * (lib/errors.ts asRelayError): each cause its own code, so a caller can
 * tell a passing condition (retry) from one an operator must fix.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asRelayError, RETRYABLE } from '../../lib/errors.js';

const errno = (code: string) => Object.assign(new Error(`${code}: from the filesystem`), { code });

test('a filesystem that refuses a write (EROFS, EACCES, EPERM) is corpus_not_writable, not retryable', () => {
  for (const code of ['EROFS', 'EACCES', 'EPERM']) {
    const refusal = asRelayError(errno(code));
    assert.equal(refusal.code, 'corpus_not_writable', code);
    assert.equal(RETRYABLE.has(refusal.code), false);
  }
});

test('a corpus directory that is gone (ENOENT) is no_corpus, not retryable', () => {
  const refusal = asRelayError(errno('ENOENT'));
  assert.equal(refusal.code, 'no_corpus');
  assert.equal(RETRYABLE.has(refusal.code), false);
});

test('a lost network mount (ENOTCONN) is store_unreachable, retryable', () => {
  const refusal = asRelayError(errno('ENOTCONN'));
  assert.equal(refusal.code, 'store_unreachable');
  assert.equal(RETRYABLE.has(refusal.code), true);
});
