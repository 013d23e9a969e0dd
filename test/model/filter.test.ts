/**
 * The filter rules of spec §8a, pure: literal names, AND across filters, OR
 * within one, a missing header never matches, `to:` naming several
 * recipients; and the index that answers them from what it parsed once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isRelayError } from '../../lib/errors.js';
import type { Deposit } from '../../lib/model/deposit.js';
import { MAX_TEXT_CHARS, matches, parseFilter, parseRecipients, searchableText, textWords, type Filterable } from '../../lib/model/filter.js';
import { idShape } from '../../lib/model/ids.js';
import { parseRecord } from '../../lib/model/record.js';
import { RecordIndex } from '../../lib/model/record-index.js';
import { record } from '../support/helpers.js';

const shape = idShape(4);
const deposit: Deposit = { provenance: 'as-received', depositedBy: 'mcp', depositedAt: '2026-11-30T00:00:00.000Z', digest: 'sha256:00' };

function rec(headers: Record<string, string>): Filterable {
  const claims = parseRecord(Buffer.from(record(headers)), shape);
  return { kind: claims.kind, from: claims.from, recipients: parseRecipients(claims.to), named: claims.named };
}

const f = (input: Parameters<typeof parseFilter>[0]) => parseFilter(input, shape);

test('parseRecipients splits to: on commas and white space, drops empties and repeats', () => {
  assert.deepEqual(parseRecipients('scout-7'), ['scout-7']);
  assert.deepEqual(parseRecipients('scout-7, Scout-7 ,all  b\tc,,scout-7'), ['scout-7', 'Scout-7', 'all', 'b', 'c']);
  assert.deepEqual(parseRecipients(null), []);
});

test('no filter, or an input with nothing in it, matches every record', () => {
  assert.equal(f({}), null);
  assert.equal(matches(null, rec({})), true);
});

test('to matches a record naming the recipient among several', () => {
  const r = rec({ to: 'a, scout-7 b' });
  assert.equal(matches(f({ to: 'scout-7' }), r), true);
  assert.equal(matches(f({ to: 'b' }), r), true);
  assert.equal(matches(f({ to: 'c' }), r), false);
});

test('names match literally: Scout-7 is not scout-7, and a prefix is not a name', () => {
  assert.equal(matches(f({ to: 'Scout-7' }), rec({ to: 'scout-7' })), false);
  assert.equal(matches(f({ from: 'scout' }), rec({ from: 'scout-7' })), false);
  assert.equal(matches(f({ kind: 'Question' }), rec({ kind: 'question' })), false);
});

test('a record without the header never matches a filter on it', () => {
  const bare = rec({});
  assert.equal(matches(f({ to: 'scout-7' }), bare), false);
  assert.equal(matches(f({ from: 'scout-7' }), bare), false);
  assert.equal(matches(f({ kind: 'question' }), bare), false);
  assert.equal(matches(f({ replies_to: 'relay-0001' }), bare), false);
  assert.equal(matches(f({ to: 'all' }), rec({ to: '' })), false);
});

test('names within one filter combine with OR, a string list and a to string with commas alike', () => {
  const r = rec({ to: 'all' });
  assert.equal(matches(f({ to: ['scout-7', 'all'] }), r), true);
  assert.equal(matches(f({ to: 'scout-7, all' }), r), true);
  assert.equal(matches(f({ kind: ['question', 'answer'] }), rec({ kind: 'answer' })), true);
});

test('from and kind values are whole names: a space in them is not a separator', () => {
  assert.equal(matches(f({ from: 'scout 7' }), rec({ from: 'scout 7' })), true);
  assert.equal(matches(f({ from: 'scout' }), rec({ from: 'scout 7' })), false);
});

test('different filters combine with AND', () => {
  const q = rec({ kind: 'question', from: 'a', to: 'b', parent: 'relay-0003' });
  assert.equal(matches(f({ kind: 'question', to: 'b' }), q), true);
  assert.equal(matches(f({ kind: 'question', to: 'c' }), q), false);
  assert.equal(matches(f({ kind: 'question', from: 'a', to: 'b', replies_to: 'relay-0003' }), q), true);
  assert.equal(matches(f({ kind: 'question', from: 'a', to: 'b', replies_to: 'relay-0004' }), q), false);
});

test('replies_to matches a record naming the id in parent: or in ref:', () => {
  assert.equal(matches(f({ replies_to: 'relay-0003' }), rec({ parent: 'relay-0003' })), true);
  assert.equal(matches(f({ replies_to: 'relay-0003' }), rec({ ref: 'relay-0001, relay-0003' })), true);
  assert.equal(matches(f({ replies_to: 'relay-0003' }), rec({ ref: 'relay-0001' })), false);
});

test('a malformed replies_to id is refused as bad_id, and a name list with nobody in it as bad_filter', () => {
  for (const [input, code] of [[{ replies_to: 'relay-3' }, 'bad_id'], [{ replies_to: 'relay-0000' }, 'bad_id'], [{ to: [] }, 'bad_filter'], [{ from: ' ' }, 'bad_filter'], [{ to: ', ' }, 'bad_filter']] as const) {
    assert.throws(() => f(input), (e) => isRelayError(e) && e.code === code, JSON.stringify(input));
  }
});

test('the index parses to: once and answers matchingAfter from it, replies_to from who names whom', () => {
  const index = new RecordIndex();
  const add = (n: number, headers: Record<string, string>) => index.add(n, deposit, parseRecord(Buffer.from(record(headers)), shape));
  add(1, { kind: 'question', from: 'a', to: 'b, c' });
  add(2, { kind: 'answer', from: 'b', to: 'a', parent: 'relay-0001' });
  add(3, { kind: 'note' });
  add(4, { kind: 'answer', from: 'c', to: 'a all', ref: 'relay-0001 relay-0002' });
  index.add(5, null, null); // damaged: held, claims nothing
  assert.equal(index.matches(1, f({ to: 'b' })) && index.matches(1, f({ to: 'c' })), true);
  assert.deepEqual(index.matchingAfter(0, f({ to: 'c' })), [1]);
  assert.deepEqual(index.matchingAfter(0, f({ to: ['a'] })), [2, 4]);
  assert.deepEqual(index.matchingAfter(2, f({ to: ['a'] })), [4]);
  assert.deepEqual(index.matchingAfter(0, f({ replies_to: 'relay-0001' })), [2, 4]);
  assert.deepEqual(index.matchingAfter(0, f({ replies_to: 'relay-0001', from: 'c' })), [4]);
  assert.deepEqual(index.matchingAfter(0, null), [1, 2, 3, 4, 5]);
  assert.equal(index.matches(5, f({ kind: 'note' })), false);
  assert.equal(index.highestHeld(), 5);
  assert.deepEqual([index.get(4)!.meta!.parent, index.get(4)!.meta!.refs], [null, ['relay-0001', 'relay-0002']]);
  assert.deepEqual([index.get(2)!.meta!.parent, index.get(2)!.meta!.refs], ['relay-0001', []]);
});

test('matchingAfter takes at most limit ids, so a catch-up walks the index in batches; markBeforeNewest finds the newest N from the end', () => {
  const index = new RecordIndex();
  const add = (n: number, headers: Record<string, string>) => index.add(n, deposit, parseRecord(Buffer.from(record(headers)), shape));
  for (let n = 1; n <= 9; n++) add(n, n % 3 === 0 ? { kind: 'note', to: 'me', parent: 'relay-0001' } : { kind: 'note', to: 'you' });
  // Batches of 2, each after the last id of the one before: every id once, in order.
  for (const filter of [null, f({ to: 'me' }), f({ replies_to: 'relay-0001' }), f({ replies_to: 'relay-0001', to: 'me' })]) {
    const walked: number[] = [];
    for (let from = 0, batch: number[]; (batch = index.matchingAfter(from, filter, 2)).length > 0; from = batch[batch.length - 1]!) {
      assert.ok(batch.length <= 2);
      walked.push(...batch);
    }
    assert.deepEqual(walked, index.matchingAfter(0, filter), JSON.stringify(filter));
  }
  assert.deepEqual(index.matchingAfter(3, f({ to: 'me' }), 1), [6]);
  assert.equal(index.markBeforeNewest(2, f({ to: 'me' })), 5, 'after relay-0005: the newest two to me are 6 and 9');
  assert.deepEqual(index.matchingAfter(index.markBeforeNewest(4, null), null), [6, 7, 8, 9]);
  assert.equal(index.markBeforeNewest(5, f({ to: 'me' })), 0, 'fewer held than asked: from the start');
  assert.equal(index.markBeforeNewest(0, f({ to: 'me' })), 9, 'none: after the highest held');
});

test('text finds whole words in any case: Unicode folding, not a substring', () => {
  const words = (text: string) => new Set(textWords(text));
  const has = (record: string, search: string) => f({ text: search })!.text!.every((word) => words(record).has(word));
  assert.equal(has('The DISK is full', 'disk full'), true, 'every word, any order, any case');
  assert.equal(has('The disk is fine', 'disk full'), false, 'every word must be there');
  assert.equal(has('deployment failed', 'deploy'), false, 'a whole word, not a substring');
  assert.equal(has('Straße gesperrt', 'STRASSE'), true, 'ß folds to ss');
  assert.equal(has('ΟΔΟΣ', 'οδος'), true, 'a final sigma folds like any sigma');
  assert.equal(has('ＡＢＣ ﬁle', 'abc file'), true, 'full-width letters and ligatures are their plain forms (NFKC)');
  assert.equal(has('snake_case and relay-0042', '0042 SNAKE_CASE'), true, 'underscores join a word, hyphens separate');
});

test('text is literal: punctuation and regex characters only separate words, and a search of them alone is refused', () => {
  assert.deepEqual(f({ text: 'a.b (c)*' })!.text, ['a', 'b', 'c']);
  assert.equal(textWords('axb').includes('a'), false, '"a.b" is two words, never a pattern matching axb');
  assert.throws(() => f({ text: '.*' }), (err) => isRelayError(err) && err.code === 'bad_filter' && /holds no word/.test(err.message));
});

test('a record is searched by its header values and body, not its first line nor its header keys', () => {
  const text = searchableText(record({ from: 'scout-7', kind: 'status' }, 'all quiet'));
  const words = textWords(text);
  assert.deepEqual(words, ['scout', '7', 'status', 'all', 'quiet']);
});

test('text refuses what is no search with bad_filter and a sentence saying what to send', () => {
  const refused = (text: string, why: RegExp) =>
    assert.throws(() => f({ text }), (err) => isRelayError(err) && err.code === 'bad_filter' && why.test(err.message) &&
      /Send a few words/.test(err.message) && (err.details as { param?: string }).param === 'text', JSON.stringify(text.slice(0, 20)));
  refused('', /holds no word/);
  refused('   ', /holds no word/);
  refused('x'.repeat(10 * 1024), /10240 characters, longer than a search can be/);
  refused('disk\0full', /NUL/);
  refused('disk \uFFFD', /not valid UTF-8/);
  refused('disk \uD800', /not valid UTF-8/);
  assert.deepEqual(f({ text: 'é'.repeat(MAX_TEXT_CHARS) })!.text, ['é'.repeat(MAX_TEXT_CHARS)], 'the cap counts characters, not bytes');
});
