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
 * Path patterns are matched by path-glob.ts, not by a glob library (it says why).
 */
import { RelayError } from '../errors.js';
import { classEnd, globHolds, globsMeet } from './path-glob.js';
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
    // git reads [[:alpha:]] as a class of letters; the matcher would read [[:alpha:] and a ], and hold no file the pattern names.
    if (segment.includes('[:')) return 'it holds a POSIX class such as [[:alpha:]], which is not taken; list the characters ([a-zA-Z])';
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
  return covers(a, b) || covers(b, a) || globsMeet(a, b);
}

/** Whether `pattern` matches `path` (read literally) or a directory above it, or, ending in /**, the directory itself. */
export function covers(pattern: string, path: string): boolean {
  const segs = path.split('/');
  return globHolds(pattern, segs) || (pattern.endsWith('/**') && globHolds(pattern.slice(0, -3), segs));
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
