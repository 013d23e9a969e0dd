/**
 * How a record's own claims (`kind:`, `from:`, `to:`) are printed on the
 * relay's lines: the line that opens a record's fence, a wait's or a
 * push's line per record, a hook's, a notifier's. Those lines are outside
 * the fence (lib/model/fence.ts), where a reader takes what it reads as the
 * relay's own words, so an author's value must not be able to draw anything
 * there: not a second line (a lone CR, U+2028, U+0085 end a line for some
 * readers), not a fake `deposited-by`, not a host's frame, not 60 KB.
 *
 * One rule, here, for every renderer: a value that is a name (or, for
 * `to:`, names separated by single spaces) is shown as it is; any
 * other is shown marked `(not a name)`, as a quoted string whose every character outside
 * printable text (controls, format characters, line and paragraph
 * separators, unassigned code points), and `<` and `>`, is a `\u` escape. Either way at most
 * CLAIM_CAP characters are shown, and a cut value says how long it was.
 * Filters still match the value itself; get_relay returns the exact bytes.
 */

/** The most characters one claim takes on a line, quotes and escapes included (a cut one adds its length after). */
export const CLAIM_CAP = 100;

export type ClaimField = 'kind' | 'from' | 'to';

/**
 * A name: `all`, or the shape every roster name and key name has (lower case
 * is an agent's name, spec §8d; a key may be named in either case). Nothing
 * else is shown bare: `SYSTEM:` or `relay/operator:` would read as the
 * relay's own words.
 */
const NAME = '[A-Za-z0-9][A-Za-z0-9._-]{0,63}';
const PLAIN: Record<ClaimField, RegExp> = {
  kind: new RegExp(`^${NAME}$`),
  from: new RegExp(`^${NAME}$`),
  to: new RegExp(`^${NAME}(?: ${NAME})*$`),
};

/**
 * Characters that print as themselves: letters, marks, numbers, punctuation,
 * symbols and the plain space. Every other character (controls, format
 * characters such as zero-width spaces and joiners, bidi controls and
 * Unicode tags, line and paragraph separators, other spaces, private-use
 * and unassigned code points) is one a reader may not see, or may not see
 * as it is: the one rule for another agent's words shown outside a fence,
 * claims here and abouts (lib/model/about.ts) alike.
 */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** Whether a character shows as itself (see PRINTABLE). */
export function printsAsItself(char: string): boolean {
  return PRINTABLE.test(char);
}

/** A character written as the escape a reader can see: \u200b, \u{e0041}. */
export function escapeOf(char: string): string {
  const code = char.codePointAt(0)!;
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * What a character that does not print as itself is, for a refusal's
 * sentence: "U+200B (a zero-width or direction character)".
 */
export function describeUnprintable(char: string): string {
  const code = char.codePointAt(0)!;
  const what = code >= 0xe0000 && code <= 0xe007f ? 'a Unicode tag character, invisible'
    : /\p{Cc}/u.test(char) ? 'a control character: a line break, a tab or another'
    : /\p{Cf}/u.test(char) ? 'a zero-width, joiner or direction character, invisible'
    : /[\p{Zl}\p{Zp}]/u.test(char) ? 'a line or paragraph separator'
    : /\p{Zs}/u.test(char) ? 'a space other than the plain one'
    : /\p{Co}/u.test(char) ? 'a private-use character'
    : 'a code point with no character assigned';
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')} (${what})`;
}
/** Escaped in every claim shown quoted: a host's frame around our text is markup (Claude Code's <channel>), and a claim must not close it. */
const MARKUP = /^[<>]$/;
/** Also escaped where the text is an attribute value (a channel's meta): what could end or break the attribute. */
const ATTRIBUTE_UNSAFE = /^["'&]$/;

export interface ClaimOptions {
  /** No surrounding quotes, and `"`, `'`, `<`, `>`, `&` escaped too: for a value the host puts in an attribute. */
  bare?: boolean;
}

/** A claim's value as a relay line shows it (see above). */
export function claimText(value: string, field: ClaimField, { bare = false }: ClaimOptions = {}): string {
  if (value.length <= CLAIM_CAP && PLAIN[field].test(value)) return value;
  const quote = bare ? '' : '"';
  const room = CLAIM_CAP - 2 * quote.length - 1; // the quotes, and the … of a cut value
  let shown = '';
  let count = 0;
  let cut = false;
  for (const char of value) {
    count++;
    if (cut) continue;
    const piece = escaped(char, bare);
    if (shown.length + piece.length > room) cut = true;
    else shown += piece;
  }
  // On a line, a value that is not a name says so, so no reader takes it for one the relay vouches for.
  const notName = bare ? '' : ', not a name';
  if (!cut) return `${quote}${shown}${quote}${bare ? '' : ' (not a name)'}`;
  return `${quote}${shown}…${quote} (${count.toLocaleString('en-US')} characters${notName})`;
}

function escaped(char: string, bare: boolean): string {
  if (char === '\\') return '\\\\';
  if (!bare && char === '"') return '\\"';
  if (PRINTABLE.test(char) && !MARKUP.test(char) && !(bare && ATTRIBUTE_UNSAFE.test(char))) return char;
  return escapeOf(char);
}
