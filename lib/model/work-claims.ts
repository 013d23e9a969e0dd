/**
 * Work claims (spec §8e): who is on what. A record `kind: claim` holds a
 * `claim:` header of `task:ID` and `path:PATTERN` targets and an optional
 * `for:` life; `kind: release` and `kind: done` with `parent:` a claim end
 * it. This module is the rule: what a claim may say, how long it lives, and
 * when two targets collide. Pure: no disk, no clock (callers pass `now`).
 *
 * Named "work claims" to keep them apart from a record's own `kind:/from:/to:`
 * headers (claim-text.ts) and from the idempotency keys' claim files.
 *
 * Path patterns are matched here, not by a glob library: picomatch (the
 * common one) compiles a pattern to a backtracking RegExp, and `*a*a*a*a*a*a*a*ab`
 * against sixty `a` took it 56 s; a claim's pattern comes from any agent.
 * The matcher below walks segments, then characters within one, remembering
 * each pair it decided, so one match costs at most the product of the two
 * lengths (256 × 4,096 characters here).
 */
import { RelayError } from '../errors.js';
import { recordHeaders } from './record.js';

export const CLAIM_KIND = 'claim';
export const RELEASE_KIND = 'release';
export const DONE_KIND = 'done';

/** Targets in one claim (spec §8e). */
export const MAX_CLAIM_TARGETS = 32;
/** Characters in one path pattern (spec §8e). */
export const MAX_PATTERN_CHARS = 256;
/** Segments in one path pattern: deeper trees than this are claimed by a directory above. */
export const MAX_PATTERN_SEGMENTS = 32;
/** Wildcards (* ** ? [...]) in one path pattern: with the segments' cap, what bounds a comparison's cost to well under a millisecond. */
export const MAX_PATTERN_WILDCARDS = 16;
/** Characters of a staged path the guard compares (git allows longer; none of ours needs more, and a match's cost is bounded by it). */
export const MAX_PATH_CHARS = 4096;
export const MIN_LIFE_MS = 10_000;
export const MAX_LIFE_MS = 24 * 3_600_000;
export const DEFAULT_LIFE_MS = 3_600_000;
/**
 * Live claims one agent may hold at once. Each costs every later claim a
 * comparison; a loop that claims without releasing would otherwise make
 * every agent's claims slower until its claims lapse.
 */
export const MAX_LIVE_CLAIMS_PER_AGENT = 1000;

const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

export type ClaimTarget = { type: 'task'; id: string } | { type: 'path'; pattern: string };

/** What a claim record says: its targets, distinct, in order, and its life. */
export interface WorkClaimText {
  targets: ClaimTarget[];
  lifeMs: number;
}

export function targetText(target: ClaimTarget): string {
  return target.type === 'task' ? `task:${target.id}` : `path:${target.pattern}`;
}

function badClaim(message: string, details: Record<string, unknown> = {}): RelayError {
  return new RelayError('bad_claim', message, details);
}

const SHOWN = 60;
/** A target as a refusal quotes it: JSON-escaped, at most SHOWN characters. */
function quoted(text: string): string {
  return JSON.stringify(text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text);
}

const EXAMPLE = 'e.g. "claim: task:fix-login path:src/auth/**"';

/**
 * The targets of a `claim:` header value, or a bad_claim refusal naming the
 * first target that is wrong and what to send instead.
 */
export function parseClaimTargets(value: string | undefined): ClaimTarget[] {
  const words = (value ?? '').split(/[ \t]+/).filter((w) => w !== '');
  if (words.length === 0) throw badClaim(`A claim needs a claim: header naming one to ${MAX_CLAIM_TARGETS} targets separated by spaces, ${EXAMPLE}.`);
  if (words.length > MAX_CLAIM_TARGETS) {
    throw badClaim(`This claim names ${words.length} targets; one claim takes at most ${MAX_CLAIM_TARGETS}. Claim a directory (path:src/api) or split the work.`, {
      limit: MAX_CLAIM_TARGETS,
    });
  }
  const seen = new Set<string>();
  const targets: ClaimTarget[] = [];
  for (const word of words) {
    const target = parseTarget(word);
    const text = targetText(target);
    if (!seen.has(text)) targets.push(target);
    seen.add(text);
  }
  return targets;
}

function parseTarget(word: string): ClaimTarget {
  if (word.startsWith('task:')) {
    const id = word.slice(5);
    if (TASK_ID.test(id)) return { type: 'task', id };
    throw badClaim(`The target ${quoted(word)} is not a task: send task:ID, ID 1–128 letters, digits or . _ : / - starting with a letter or digit (e.g. task:fix-login).`, {
      target: word.slice(0, SHOWN),
    });
  }
  if (word.startsWith('path:')) {
    const pattern = word.slice(5);
    const why = patternFault(pattern);
    if (why === null) return { type: 'path', pattern };
    throw badClaim(`The target ${quoted(word)} is not a path a claim can hold: ${why}.`, { target: word.slice(0, SHOWN) });
  }
  throw badClaim(`The target ${quoted(word)} is neither task:ID nor path:PATTERN; ${EXAMPLE}.`, { target: word.slice(0, SHOWN) });
}

/** Why a path pattern is refused, or null for a fit one. */
export function patternFault(pattern: string): string | null {
  if (pattern === '') return 'it names nothing; send a repository-relative path or glob such as path:src/api/**';
  if (pattern.length > MAX_PATTERN_CHARS) return `it is ${pattern.length} characters and a pattern takes at most ${MAX_PATTERN_CHARS}; claim a shorter directory`;
  if (pattern.startsWith('/')) return 'it starts with /; send a path relative to the repository root (src/x.ts, not /src/x.ts)';
  if (/[\p{C}\s\\<>]/u.test(pattern)) return 'it holds a space, a control character, a backslash, < or >; send / between segments and no escapes';
  const segments = pattern.split('/');
  if (segments.length > MAX_PATTERN_SEGMENTS) return `it has ${segments.length} segments and a pattern takes at most ${MAX_PATTERN_SEGMENTS}; claim a directory above`;
  const wildcards = pattern.replace(/\*\*/g, '*').replace(/[^*?[]/g, '').length;
  if (wildcards > MAX_PATTERN_WILDCARDS) return `it has ${wildcards} wildcards and a pattern takes at most ${MAX_PATTERN_WILDCARDS}; claim a directory instead`;
  for (const segment of segments) {
    if (segment === '') return 'it has an empty segment (// or a trailing /); write src/api, not src//api or src/api/';
    if (segment === '.' || segment === '..') return 'it has a . or .. segment; name the path as it is under the repository root';
    if (segment.includes('**') && segment !== '**') return '** stands only as a whole segment (src/**/x.ts); use * within a segment';
    if (classFault(segment)) return 'a [ in it is never closed by ]';
  }
  if (segments.every((s) => /^\*+$/.test(s))) return 'it matches every path of the repository; claim the directories or files you will edit';
  return null;
}

function classFault(segment: string): boolean {
  for (let i = 0; i < segment.length; i++) {
    if (segment[i] !== '[') continue;
    const end = classEnd(segment, i);
    if (end < 0) return true;
    i = end;
  }
  return false;
}

/** The index of the `]` closing the class opened at `open`, or -1. A `]` first in the class (after ! or ^) is a member. */
function classEnd(segment: string, open: number): number {
  let i = open + 1;
  if (segment[i] === '!' || segment[i] === '^') i++;
  if (segment[i] === ']') i++;
  const end = segment.indexOf(']', i);
  return end;
}

/** A `for:` value as milliseconds (1 h when absent), or a bad_claim refusal. */
export function parseClaimLife(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_LIFE_MS;
  const m = /^(\d{1,6})\s*([smh])$/.exec(value.trim());
  const ms = m ? Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'] : NaN;
  if (ms >= MIN_LIFE_MS && ms <= MAX_LIFE_MS) return ms;
  throw badClaim(`The claim's for: ${quoted(value.trim())} is not a life from 10s to 24h; send Ns, Nm or Nh (e.g. for: 30m), or leave it out for 1h.`, {
    min: '10s',
    max: '24h',
  });
}

/** What a claim record's text says (its `claim:` and `for:`), or a bad_claim refusal. */
export function workClaimOf(text: string): WorkClaimText {
  const headers = recordHeaders(text.split('\n')).single;
  return { targets: parseClaimTargets(headers.get('claim')), lifeMs: parseClaimLife(headers.get('for')) };
}

/** Whether a record kind takes part in claims, and which part (kinds are matched exactly, as filters match them). */
export function claimRole(kind: string | null): 'claim' | 'end' | null {
  if (kind === CLAIM_KIND) return 'claim';
  if (kind === RELEASE_KIND || kind === DONE_KIND) return 'end';
  return null;
}

// ---- collisions -------------------------------------------------------------------------

/** Whether two targets collide (spec §8e): tasks when equal, paths when some path could match both. */
export function targetsCollide(a: ClaimTarget, b: ClaimTarget): boolean {
  if (a.type === 'task') return b.type === 'task' && a.id === b.id;
  return b.type === 'path' && pathsCollide(a.pattern, b.pattern);
}

/**
 * Whether two path patterns collide: equal; either matches the other read
 * as a literal path; either (or it without a trailing `/**`) matches a
 * directory that holds the other (`src/api` holds `src/api/x.ts` and
 * `src/api/**`); or some path matches both, or lies under a path each
 * matches (`src/*.ts` and `src/a*` both take src/a.ts). Two patterns collide
 * only where one's literal start (before its first * ? [) begins the
 * other's, checked first and cheaply.
 */
export function pathsCollide(a: string, b: string): boolean {
  if (a === b) return true;
  const la = literalStart(a);
  const lb = literalStart(b);
  if (!la.startsWith(lb) && !lb.startsWith(la)) return false;
  return covers(a, b) || covers(b, a) || meet(compile(a).segments, compile(b).segments);
}

/** Whether `pattern` matches `path` (read literally) or a directory above it, or, ending in /**, the directory itself. */
export function covers(pattern: string, path: string): boolean {
  const segs = path.split('/');
  return compile(pattern).holds(segs) || (pattern.endsWith('/**') && compile(pattern.slice(0, -3)).holds(segs));
}

/** Whether a staged path falls under a path claim's pattern (the guard's question). */
export function pathUnder(pattern: string, path: string): boolean {
  return path.length <= MAX_PATH_CHARS && path.startsWith(literalStart(pattern).replace(/\/$/, '')) && covers(pattern, path);
}

/** A pattern's start before its first * ? [: two patterns collide only where one's begins the other's. */
export function literalStart(pattern: string): string {
  const m = /[*?[]/.exec(pattern);
  return m ? pattern.slice(0, m.index) : pattern;
}

// ---- the matcher ------------------------------------------------------------------------

type Token = { t: 'char'; c: string } | { t: 'any' } | { t: 'star' } | { t: 'class'; negate: boolean; members: string[]; ranges: [string, string][] };
type Segment = Token[] | 'globstar';

interface Glob {
  segments: Segment[];
  /** Whether the pattern matches the path or a directory above it. */
  holds(path: readonly string[]): boolean;
}

const compiled = new Map<string, Glob>();

/** A pattern, compiled once (a small cache: the same live claims are compared again and again). */
function compile(pattern: string): Glob {
  let glob = compiled.get(pattern);
  if (glob) return glob;
  const segments: Segment[] = [];
  for (const s of pattern.split('/')) {
    if (s === '**') {
      if (segments[segments.length - 1] !== 'globstar') segments.push('globstar'); // **/** is **
    } else segments.push(tokens(s));
  }
  glob = { segments, holds: (path) => matchSegments(segments, path) };
  if (compiled.size >= 4096) compiled.clear();
  compiled.set(pattern, glob);
  return glob;
}

function tokens(segment: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!;
    if (c === '*') {
      if (out[out.length - 1]?.t !== 'star') out.push({ t: 'star' });
    } else if (c === '?') out.push({ t: 'any' });
    else if (c === '[' && classEnd(segment, i) > 0) {
      const end = classEnd(segment, i);
      let j = i + 1;
      const negate = segment[j] === '!' || segment[j] === '^';
      if (negate) j++;
      const members: string[] = [];
      const ranges: [string, string][] = [];
      for (let k = j; k < end; k++) {
        if (segment[k + 1] === '-' && k + 2 < end) {
          ranges.push([segment[k]!, segment[k + 2]!]);
          k += 2;
        } else members.push(segment[k]!);
      }
      out.push({ t: 'class', negate, members, ranges });
      i = end;
    } else out.push({ t: 'char', c });
  }
  return out;
}

/**
 * Segments against the path's first segments (the whole path, or a
 * directory above it); ** takes zero or more. A table filled from the end:
 * each (i, j) decided once.
 */
function matchSegments(segments: Segment[], path: readonly string[]): boolean {
  const width = path.length + 1;
  const table = new Uint8Array((segments.length + 1) * width);
  for (let j = 1; j <= path.length; j++) table[segments.length * width + j] = 1;
  for (let i = segments.length - 1; i >= 0; i--) {
    const seg = segments[i]!;
    for (let j = path.length; j >= 0; j--) {
      let ok: boolean;
      if (seg === 'globstar') ok = table[(i + 1) * width + j] === 1 || (j < path.length && table[i * width + j + 1] === 1);
      else ok = j < path.length && table[(i + 1) * width + j + 1] === 1 && matchSegment(seg, path[j]!);
      table[i * width + j] = ok ? 1 : 0;
    }
  }
  return table[0] === 1;
}

/**
 * One segment's tokens against one path segment: the greedy walk that
 * retreats only to the last star, which is exact for stars that never cross
 * a / and costs at most the product of the two lengths.
 */
function matchSegment(pattern: Token[], text: string): boolean {
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    const tok = pattern[p];
    if (tok && tok.t === 'star') {
      starP = p++;
      starT = t;
    } else if (tok && one(tok, text[t]!)) {
      p++;
      t++;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else return false;
  }
  while (pattern[p]?.t === 'star') p++;
  return p === pattern.length;
}

function one(tok: Token, c: string): boolean {
  switch (tok.t) {
    case 'char':
      return tok.c === c;
    case 'any':
      return true;
    case 'class': {
      const inside = tok.members.includes(c) || tok.ranges.some(([lo, hi]) => c >= lo && c <= hi);
      return inside !== tok.negate;
    }
    default:
      return false;
  }
}

// ---- two patterns against each other --------------------------------------------------------

/**
 * Whether some path is taken by both patterns: their segments agree, pair
 * by pair, until either ends (what remains lies under a directory the ended
 * one names); ** takes zero or more of the other's segments. Each pair of
 * positions is decided once, and a pair of segments compared only when the
 * walk reaches it: at most the product of the two patterns' lengths in all.
 */
function meet(a: Segment[], b: Segment[]): boolean {
  const width = b.length + 1;
  const memo = new Uint8Array((a.length + 1) * width); // 0 not yet, 1 yes, 2 no
  const at = (i: number, j: number): boolean => {
    if (i === a.length || j === b.length) return true;
    const k = i * width + j;
    if (memo[k] === 0) {
      const x = a[i]!;
      const y = b[j]!;
      let ok: boolean;
      if (x === 'globstar') ok = at(i + 1, j) || at(i, j + 1);
      else if (y === 'globstar') ok = at(i, j + 1) || at(i + 1, j);
      else ok = at(i + 1, j + 1) && overlap(x, y);
      memo[k] = ok ? 1 : 2;
    }
    return memo[k] === 1;
  };
  return at(0, 0);
}

/** Whether some segment matches both token lists: a plain one is matched by the other; else a table over the two, filled from the end. */
function overlap(a: Token[], b: Token[]): boolean {
  if (a.every((t) => t.t === 'char')) return matchSegment(b, a.map((t) => (t as { c: string }).c).join(''));
  if (b.every((t) => t.t === 'char')) return matchSegment(a, b.map((t) => (t as { c: string }).c).join(''));
  const width = b.length + 1;
  const table = new Uint8Array((a.length + 1) * width);
  table[a.length * width + b.length] = 1;
  for (let i = a.length; i >= 0; i--) {
    for (let j = b.length; j >= 0; j--) {
      if (i === a.length && j === b.length) continue;
      const x = a[i];
      const y = b[j];
      const xStar = x !== undefined && x.t === 'star';
      const yStar = y !== undefined && y.t === 'star';
      // A star takes nothing more, or one more character that the other's token takes (two stars: taking nothing is enough).
      let ok = (xStar && table[(i + 1) * width + j] === 1) || (yStar && table[i * width + j + 1] === 1);
      if (!ok && xStar && y !== undefined && !yStar) ok = table[i * width + j + 1] === 1;
      if (!ok && yStar && x !== undefined && !xStar) ok = table[(i + 1) * width + j] === 1;
      if (!ok && x !== undefined && y !== undefined && !xStar && !yStar) ok = table[(i + 1) * width + j + 1] === 1 && someCharOf(x, y);
      table[i * width + j] = ok ? 1 : 0;
    }
  }
  return table[0] === 1;
}

/** Whether one character matches both tokens (neither a star). */
function someCharOf(x: Token, y: Token): boolean {
  if (x.t === 'char') return one(y, x.c);
  if (y.t === 'char') return one(x, y.c);
  if (x.t === 'any' || y.t === 'any') return true; // a class always takes some character
  if (x.t !== 'class' || y.t !== 'class') return false;
  if (x.negate && y.negate) return true;
  if (x.negate) return classOutside(y, x);
  if (y.negate) return classOutside(x, y);
  return x.members.some((c) => one(y, c)) || y.members.some((c) => one(x, c)) || x.ranges.some(([lo, hi]) => y.ranges.some(([l, h]) => lo <= h && l <= hi));
}

/** Whether the plain class `x` takes a character the negated class `y` leaves out. */
function classOutside(x: Token & { t: 'class' }, y: Token & { t: 'class' }): boolean {
  if (x.members.some((c) => one(y, c))) return true;
  for (const [lo, hi] of x.ranges) {
    // Walk up the range, jumping over each of y's ranges: at most one step per member or range of y.
    for (let c = lo.charCodeAt(0); c <= hi.charCodeAt(0); ) {
      const ch = String.fromCharCode(c);
      if (one(y, ch)) return true;
      const over = y.ranges.find(([l, h]) => ch >= l && ch <= h);
      c = over ? over[1].charCodeAt(0) + 1 : c + 1;
    }
  }
  return false;
}
