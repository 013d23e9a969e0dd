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
 * Characters an about may not hold: control characters (a line break or tab
 * among them: it is one line), the Unicode line and paragraph separators,
 * and the bidirectional controls that make text read otherwise than it is.
 */
const NOT_PRINTABLE = /[\p{Cc}\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
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
  if (NOT_PRINTABLE.test(about)) {
    throw badAbout('not_printable', 'This about (kind: about) holds a line break, a tab or another control or direction character; an about is one line ' +
      'of printable text, so nothing was stored. Send it as one plain line.');
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
 * hand). Every door that shows one shows this.
 */
export function shownAbout(text: string): string {
  const printable = [...text].map((ch) => (NOT_PRINTABLE.test(ch) ? ' ' : ch)).join('').replace(/<(?=\/?channel)/gi, '‹').replace(/<<<|>>>/g, '…');
  const chars = [...printable.trim()];
  return chars.length > MAX_ABOUT_CHARS ? chars.slice(0, MAX_ABOUT_CHARS - 1).join('') + '…' : chars.join('');
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
