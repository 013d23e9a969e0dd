/**
 * The glob patterns of work claims' path: targets (spec §8e): `/`-separated,
 * `*`, `?` and `[...]` within a segment, `**` a whole segment, as in git's
 * glob pathspecs. A pattern matches a path, or a directory above it.
 *
 * Matched here, not by a glob library: picomatch (the common one) compiles
 * a pattern to a backtracking RegExp, and `*a*a*a*a*a*a*a*ab` against sixty
 * `a` took it 56 s; a claim's pattern comes from any agent. The matcher
 * walks segments, then characters within one, remembering each pair it
 * decided, so one match costs at most the product of the two lengths (256 ×
 * 4,096 characters here); two patterns are compared against each other the
 * same way. Which patterns are fit is work-claims.ts's rule.
 */

/** The index of the `]` closing the class opened at `open`, or -1. A `]` first in the class (after ! or ^) is a member. */
export function classEnd(segment: string, open: number): number {
  let i = open + 1;
  if (segment[i] === '!' || segment[i] === '^') i++;
  if (segment[i] === ']') i++;
  const end = segment.indexOf(']', i);
  return end;
}

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

/** Whether `pattern` matches the path given as its segments, or a directory above it. */
export function globHolds(pattern: string, path: readonly string[]): boolean {
  return compile(pattern).holds(path);
}

/** Whether some path is taken by both patterns (or lies under a path each takes). */
export function globsMeet(a: string, b: string): boolean {
  return meet(compile(a).segments, compile(b).segments);
}
