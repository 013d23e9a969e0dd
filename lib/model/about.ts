/**
 * An agent's about: one line saying what it does and knows, which the roster
 * shows beside its name (docs/agents.md). It is a record like any other,
 *
 *   @p-e/x0
 *   kind: about
 *   from: scout-7
 *
 *   Reads the TypeScript sources; knows the store's append path.
 *
 * so it is durable, mirrored and reviewable in git, and every door's append
 * sends one with no tool of its own. Its subject is the agent its channel
 * names (depositingAgent), never its own from: claim. Whoever reads it is
 * another agent, so it is held to what fits in a line of someone else's
 * text: printable, short, and free of anything that reads as a record frame
 * or a host's frame. Pure: no disk.
 */
import { RelayError } from '../errors.js';
import { describeUnprintable, escapeOf, printsAsItself } from './claim-text.js';
import { decodeRecordText, FIRST_LINE, recordBody } from './record.js';

/** The kind: that makes a record an about (matched literally, as filters match kind:). */
export const ABOUT_KIND = 'about';
/**
 * At most this many characters (code points): a line a roster can show
 * twenty of, well under what a model skims, and far below any body cap.
 */
export const MAX_ABOUT_CHARS = 200;

export type AboutFault = 'empty' | 'too_long' | 'not_printable' | 'frame_text';

/**
 * Text that draws a frame where another agent reads it: our record fences
 * (lib/model/fence.ts) and the host's channel tag that a push is shown in.
 */
const FRAME_TEXT = /<<<|>>>|<\/?channel/i;

/** The about a kind: about record states: its body, less one final line ending. Refused bad_about when it is no fit line. */
export function aboutOf(record: Uint8Array): string {
  const body = recordBody(decodeRecordText(record)).replace(/\r?\n$/, '');
  return checkAbout(body);
}

/** The text itself, checked: returned trimmed of spaces at its ends, or refused bad_about with a sentence. */
export function checkAbout(text: string): string {
  const about = text.replace(/^ +| +$/g, '');
  if (about === '') throw badAbout('empty', 'This about (kind: about) is empty, so nothing was stored. Send one line saying what you do and know, after the headers and an empty line.');
  const chars = [...about].length;
  if (chars > MAX_ABOUT_CHARS) {
    throw badAbout('too_long', `This about (kind: about) is ${chars} characters; an about is one line of at most ${MAX_ABOUT_CHARS}, so nothing was stored. ` +
      'Send a shorter line, and put the rest in a record of another kind that the line can point to.', { limit: MAX_ABOUT_CHARS, size: chars });
  }
  // Printable by the one rule for other agents' words (claim-text.ts): what a reader cannot see is never held.
  const unseen = [...about].filter((ch) => !printsAsItself(ch));
  if (unseen.length > 0) {
    const kinds = [...new Set(unseen.map(describeUnprintable))];
    const named = kinds.slice(0, 3).join(', ') + (kinds.length > 3 ? `, and ${kinds.length - 3} more` : '');
    throw badAbout('not_printable', `This about (kind: about) holds ${unseen.length} character${unseen.length === 1 ? '' : 's'} that ` +
      `do${unseen.length === 1 ? 'es' : ''} not print as ${unseen.length === 1 ? 'itself' : 'themselves'}: ${named}. An about is one line of printable text ` +
      '(letters, marks, digits, punctuation, symbols and plain spaces), so nothing was stored. Send it as one plain line without them.',
    { characters: unseen.length, first: describeUnprintable(unseen[0]!) });
  }
  if (FRAME_TEXT.test(about)) {
    throw badAbout('frame_text', 'This about (kind: about) holds ">>>", "<<<" or a <channel> tag, which frame other agents\' text where it is shown, ' +
      'so nothing was stored. Send the line without them.');
  }
  return about;
}

/**
 * An about as it is shown: printable and capped whatever it came from (a
 * record written by a version with other rules, a roster file edited by
 * hand). Every door that shows one shows this. A character that does not
 * print as itself is written as its escape (`\u200b`, `\u{e0041}`), by
 * the rule claims are shown by (claim-text.ts), so hidden text is seen, not
 * passed on; showing a shown about again changes nothing.
 */
export function shownAbout(text: string): string {
  const printable = [...text].map((ch) => (printsAsItself(ch) ? ch : escapeOf(ch))).join('').replace(/<(?=\/?channel)/gi, '‹').replace(/<<<|>>>/g, '…');
  const chars = [...printable.trim()];
  return chars.length > MAX_ABOUT_CHARS ? chars.slice(0, MAX_ABOUT_CHARS - 1).join('') + '…' : chars.join('');
}

/** An about in quotes on a line of text: shownAbout, its quotes escaped (its backslashes are its escapes'). */
export function quotedAbout(text: string): string {
  return `"${shownAbout(text).replace(/"/g, '\\"')}"`;
}

/** The record that states `about` for `agent`. */
export function aboutRecord(agent: string, about: string): string {
  return `${FIRST_LINE}\nkind: ${ABOUT_KIND}\nfrom: ${agent}\n\n${about}\n`;
}

/** An about from a channel that names no agent: no one's roster line could trust it. */
export function aboutUnnamed(): RelayError {
  return new RelayError('about_unnamed', 'This record is an about (kind: about), which states what one agent does, and this channel names no agent, ' +
    'so nothing was stored. Send it through your own named channel (serve --agent NAME, or signed as NAME over HTTP); an operator sets one ' +
    'with `p-e-relay agents about NAME TEXT`.');
}

function badAbout(why: AboutFault, sentence: string, details: Record<string, unknown> = {}): RelayError {
  return new RelayError('bad_about', sentence, { why, ...details });
}
