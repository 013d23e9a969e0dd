/**
 * Generated input for the four parsers every byte from outside passes
 * through: the id parser, the record parser, the deposit-header splitter and
 * the Authorization parser. Two kinds of property each: what is built
 * round-trips exactly, and whatever arrives (any string, any bytes, any
 * value) is answered, either with a result that obeys the rules or with a
 * RelayError of an expected code, never anything else thrown.
 *
 * `npm test` runs a few hundred cases per property; P_E_RELAY_LONG=1 runs
 * 20,000.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { checkCredential, computeSignature, formatAuthorization, parseAuthorization } from '../../lib/auth/sign.js';
import { verifyCredential } from '../../lib/auth/verify.js';
import { buildRecordFile, digestOf, PROVENANCES, splitRecordFile, type Deposit } from '../../lib/model/deposit.js';
import { RelayError } from '../../lib/errors.js';
import { idShape, idsIn, MAX_ID_WIDTH, MIN_ID_WIDTH } from '../../lib/model/ids.js';
import { encodeRecordText, MAX_NAMED_IDS, parseRecord } from '../../lib/model/record.js';
import { scale } from '../support/reliability-helpers.js';

const RUNS = { numRuns: scale(300, 20_000) };
const shape = idShape();

/** Runs `body`; a throw must be a RelayError with one of `codes`. Returns the result, or null when refused. */
function answers<T>(codes: string[], body: () => T): T | null {
  try {
    return body();
  } catch (err) {
    assert.ok(err instanceof RelayError, `threw ${String(err)} instead of a RelayError`);
    assert.ok(codes.includes(err.code), `refused with ${err.code}, expected one of ${codes.join(', ')}`);
    assert.ok(err.message.length > 20 && /[.!]$/.test(err.message.trim()), `a sentence: ${err.message}`);
    return null;
  }
}

// Any UTF-16 code unit, lone surrogates included: what a JSON string can carry.
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));
const anyText = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: codeUnit }), fc.string({ unit: 'grapheme' }));
/** A header value as a sender writes it: no line break, no NUL. */
const headerValue = fc.string({ unit: 'grapheme', maxLength: 40 }).filter((v) => !/[\r\n\0]/.test(v));

// ---- ids --------------------------------------------------------------------------------

test('ids: format and parse round-trip at every width, and relay-0000 is a mark, not a record', () => {
  fc.assert(
    fc.property(fc.integer({ min: MIN_ID_WIDTH, max: MAX_ID_WIDTH }).chain((w) => fc.tuple(fc.constant(w), fc.integer({ min: 0, max: 10 ** w - 1 }))), ([w, n]) => {
      const s = idShape(w);
      assert.equal(s.parse(s.format(n)), n);
      assert.equal(s.parseRecordId(s.format(n)), n === 0 ? null : n);
    }),
    RUNS,
  );
});

test('ids: any value is answered, and only the one canonical spelling of an id is taken (no trimming, padding or case folding)', () => {
  const near = fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), fc.boolean()).map(([n, pre, post, upper]) => {
    const id = `${pre}${shape.format(n)}${post}`;
    return upper ? id.toUpperCase() : id;
  });
  fc.assert(
    fc.property(fc.oneof(fc.anything(), anyText, near), (value) => {
      const n = shape.parse(value);
      if (n === null) return;
      assert.ok(Number.isInteger(n) && n >= 0 && n <= shape.max);
      assert.equal(shape.format(n), value, 'a parsed id is exactly its canonical spelling');
    }),
    RUNS,
  );
});

test('ids: idsIn finds exactly the tokens of the store\'s shape, whatever else is in the value', () => {
  fc.assert(
    fc.property(anyText, (value) => {
      const found = idsIn(value, shape);
      const tokens = value.split(/[\s,]+/);
      assert.deepEqual(found, tokens.map((t) => shape.parseRecordId(t)).filter((n) => n !== null));
    }),
    RUNS,
  );
});

// ---- records ----------------------------------------------------------------------------

const recordParts = fc.record({
  kind: fc.option(headerValue),
  from: fc.option(headerValue),
  to: fc.option(headerValue),
  parent: fc.option(fc.integer({ min: 1, max: 9999 })),
  refs: fc.array(fc.array(fc.integer({ min: 1, max: 9999 }), { maxLength: 10 }), { maxLength: 10 }), // past 64 ids at times
  extra: fc.array(fc.tuple(fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), headerValue), { maxLength: 3 }),
  body: fc.string({ unit: 'grapheme', maxLength: 200 }).filter((b) => !b.includes('\0')),
  crlf: fc.boolean(),
});

test('records: what a sender builds parses back to the same claims, with LF or CRLF', () => {
  fc.assert(
    fc.property(recordParts, (p) => {
      const reserved = new Set(['kind', 'from', 'to', 'parent', 'ref']);
      const lines = ['@p-e/x0'];
      if (p.kind !== null) lines.push(`kind: ${p.kind}`);
      if (p.from !== null) lines.push(`from: ${p.from}`);
      if (p.to !== null) lines.push(`to: ${p.to}`);
      if (p.parent !== null) lines.push(`parent: ${shape.format(p.parent)}`);
      for (const group of p.refs) lines.push(`ref: ${group.map(shape.format).join(group.length % 2 ? ', ' : ' ')}`);
      for (const [k, v] of p.extra) if (!reserved.has(k)) lines.push(`${k}: ${v}`);
      const text = [...lines, '', p.body].join(p.crlf ? '\r\n' : '\n');
      const named = [...new Set([...(p.parent === null ? [] : [p.parent]), ...p.refs.flat()])];
      const claims = answers(['too_many_refs'], () => parseRecord(Buffer.from(text), shape));
      if (claims === null) {
        assert.ok(named.length > MAX_NAMED_IDS);
        return;
      }
      const expect = (v: string | null) => (v === null || v.trim() === '' ? null : v.trim());
      assert.deepEqual(claims, { kind: expect(p.kind), from: expect(p.from), to: expect(p.to), parent: p.parent, named });
    }),
    RUNS,
  );
});

test('records: any bytes are answered with claims that obey the rules, or refused as bad_record / too_large / too_many_refs', () => {
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 300 }),
    anyText.map((s) => Buffer.from(s)),
    fc.tuple(fc.constantFrom('@p-e/x0\n', '@p-e/x0\r\n', '@p-e/x0', '\ufeff@p-e/x0\n', '@P-E/X0\n', ' @p-e/x0\n'), anyText).map(([head, rest]) => Buffer.from(head + rest)),
  );
  fc.assert(
    fc.property(bytes, (b) => {
      const claims = answers(['bad_record', 'too_large', 'too_many_refs'], () => parseRecord(b, shape, 200));
      if (claims === null) return;
      const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(b);
      assert.ok(b.length <= 200 && !b.includes(0));
      assert.match(text, /^@p-e\/x0(\r?\n|$)/, 'only records whose first line is exactly @p-e/x0 are taken');
      assert.ok(claims.named.length <= MAX_NAMED_IDS && claims.named.every((n) => n >= 1 && n <= shape.max));
      assert.ok(claims.parent === null || claims.named[0] === claims.parent);
    }),
    RUNS,
  );
});

test('records: a JSON string becomes exactly its UTF-8 bytes, or is refused when it holds a lone surrogate', () => {
  fc.assert(
    fc.property(anyText, (s) => {
      const encoded = answers(['bad_record'], () => encodeRecordText(s));
      if (encoded === null) assert.ok(/[\uD800-\uDFFF]/.test(s) && Buffer.from(s).toString('utf8') !== s, 'only ill-formed text (a lone surrogate) is refused');
      else assert.equal(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(encoded), s);
    }),
    RUNS,
  );
});

// ---- the deposit header -------------------------------------------------------------------

const deposits = fc.record({
  provenance: fc.constantFrom(...PROVENANCES),
  depositedBy: fc.oneof(fc.constant('mcp'), fc.stringMatching(/^(mcp|http|cli)\/[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/)),
  depositedAt: fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString()),
});

test('deposit: a file built from any record bytes splits back into the same deposit and the same bytes', () => {
  fc.assert(
    fc.property(deposits, fc.uint8Array({ maxLength: 500 }), (d, record) => {
      const deposit: Deposit = { ...d, digest: digestOf(record) };
      const split = splitRecordFile(buildRecordFile(deposit, record));
      assert.deepEqual(split.deposit, deposit);
      assert.deepEqual(Buffer.from(split.record), Buffer.from(record));
    }),
    RUNS,
  );
});

test('deposit: any bytes are split into a record whose digest checks, or refused as damaged', () => {
  const files = fc.oneof(
    fc.uint8Array({ maxLength: 400 }),
    fc.tuple(deposits, fc.uint8Array({ maxLength: 200 }), fc.uint8Array({ maxLength: 50 })).map(([d, record, tail]) => Buffer.concat([buildRecordFile({ ...d, digest: digestOf(record) }, record), tail])),
  );
  fc.assert(
    fc.property(files, (file) => {
      const split = answers(['damaged'], () => splitRecordFile(Buffer.from(file)));
      if (split !== null) assert.equal(digestOf(split.record), split.deposit.digest);
    }),
    RUNS,
  );
});

test('deposit: one changed byte anywhere in a file is refused as damaged, or leaves the record bytes as they were', () => {
  fc.assert(
    fc.property(deposits, fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.nat(), fc.integer({ min: 1, max: 255 }), (d, record, at, flip) => {
      const file = buildRecordFile({ ...d, digest: digestOf(record) }, record);
      const i = at % file.length;
      file[i] = file[i]! ^ flip;
      const split = answers(['damaged'], () => splitRecordFile(file));
      if (split !== null) assert.deepEqual(Buffer.from(split.record), Buffer.from(record), `byte ${i} changed and the split still claims a whole record`);
    }),
    RUNS,
  );
});

// ---- Authorization ------------------------------------------------------------------------

const credentials = fc
  .record({
    agent: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
    ts: fc.stringMatching(/^[0-9]{1,12}$/),
    sig: fc.stringMatching(/^[0-9a-f]{64}$/),
  })
  .map((c) => ({ ...c })); // a plain object, as the parser returns

test('Authorization: a formatted credential parses back exactly, whatever the scheme\'s case, the spacing or the order', () => {
  fc.assert(
    fc.property(credentials, fc.constantFrom('PE-HMAC', 'pe-hmac', 'Pe-Hmac'), fc.constantFrom(',', ', ', ' , ', ',  '), fc.nat(5), (c, scheme, comma, order) => {
      assert.deepEqual(parseAuthorization(formatAuthorization(c)), c);
      const fields = [`agent=${c.agent}`, `ts=${c.ts}`, `sig=${c.sig}`];
      const permuted = [fields[order % 3]!, ...fields.filter((_, i) => i !== order % 3)];
      if (order > 2) permuted.reverse();
      assert.deepEqual(parseAuthorization(`${scheme} ${permuted.join(comma)}`), c);
    }),
    RUNS,
  );
});

test('Authorization: any header value is answered with a well-shaped credential or refused as malformed_authorization', () => {
  const mutated = fc.tuple(credentials, fc.nat(), anyText).map(([c, at, insert]) => {
    const header = formatAuthorization(c);
    const i = at % (header.length + 1);
    return header.slice(0, i) + insert + header.slice(i + (at % 3));
  });
  fc.assert(
    fc.property(fc.oneof(anyText, mutated), (header) => {
      const c = answers(['malformed_authorization'], () => parseAuthorization(header));
      if (c === null) return;
      assert.deepEqual(checkCredential(c), c, 'what the parser hands on passes the shape checks');
    }),
    RUNS,
  );
});

test('Authorization: a signature verifies for exactly the key, method, ts and body it was made over', async () => {
  await fc.assert(
    fc.asyncProperty(
      credentials.map((c) => c.agent),
      fc.uint8Array({ minLength: 1, maxLength: 64 }),
      fc.constantFrom('POST', 'GET'),
      fc.integer({ min: 1_000_000_000, max: 4_000_000_000 }),
      fc.uint8Array({ maxLength: 200 }),
      fc.nat(),
      async (agent, key, method, tsNumber, body, at) => {
        const ts = String(tsNumber);
        const verifier = { keys: { keyOf: async () => Buffer.from(key) }, guard: { accept: async () => true }, now: () => tsNumber * 1000 };
        const sig = computeSignature(key, method, ts, body);
        assert.equal(await verifyCredential({ agent, ts, sig }, method, body, verifier), agent);
        // The same body with one bit changed (or, for an empty body, one byte added).
        const other = Buffer.from(body.length > 0 ? body : [0]);
        if (body.length > 0) other[at % other.length] = other[at % other.length]! ^ 1;
        for (const [m, b] of [[method === 'POST' ? 'GET' : 'POST', body], [method, other]] as const) {
          await assert.rejects(verifyCredential({ agent, ts, sig }, m, b, verifier), (err) => err instanceof RelayError && err.code === 'bad_signature');
        }
      },
    ),
    { numRuns: scale(100, 5000) },
  );
});
