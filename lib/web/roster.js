// The roster (spec §8d): who is on this relay, when each was last seen, and
// who is waiting now, and what each says it does and knows (its about), read
// from GET /agents. Redrawn every poll interval and
// soon after a record lands (a record's sender has just been seen), so the
// page never asks more than once per interval.

import { listAgents } from './api.js';
import { byId, el, localTime } from './dom.js';
import { redrawLoop } from './live.js';

const loop = redrawLoop(drawRoster);
/** Draws the roster now and then every poll interval. */
export const startRoster = loop.start;
/** Redraws within a second (a record landed), once however many land. */
export const rosterSoon = loop.soon;

async function drawRoster() {
  const bar = byId('roster');
  let agents;
  try {
    agents = await listAgents();
  } catch (err) {
    bar.replaceChildren(el('strong', {}, 'Agents:'), ' ', el('span', { class: 'hint' }, `the roster could not be read (${err.message})`));
    return;
  }
  const sorted = [...agents].sort((a, b) => (a.name < b.name ? -1 : 1));
  const waiting = sorted.filter((a) => a.waiting).length;
  bar.replaceChildren(
    el('strong', {}, `Agents (${sorted.length}${waiting ? `, ${waiting} waiting` : ''}):`), ' ',
    ...(sorted.length ? sorted.flatMap((agent) => [chip(agent), ' ']) : [el('span', { class: 'hint' }, 'none yet: a name appears once it serves, signs or is given a key')]),
  );
}

/** The most characters of an about shown: the hub caps them already; a page never trusts that alone. */
const ABOUT_CHARS = 200;

/** A character as the page shows it: itself when it prints as itself, else \u200b or \u{e0041}. */
function shown(char) {
  if (/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(char)) return char;
  const code = char.codePointAt(0);
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

function chip(agent) {
  const how = (agent.how ?? []).join(', ');
  // Another agent's words: a text node (never markup), capped, and every character that does not print as itself
  // (controls, zero-width and direction characters, Unicode tags) written as its escape, as the hub shows it.
  const about = typeof agent.about === 'string' ? [...[...agent.about].map(shown).join('')].slice(0, ABOUT_CHARS).join('') : '';
  return el('span', {
    class: `agent${agent.waiting ? ' waiting' : ''}`,
    'data-agent': agent.name,
    'data-waiting': agent.waiting ? 'true' : 'false',
    title: `last seen ${localTime(agent.lastSeen)}${how ? ` (${how})` : ''}${agent.waiting ? '; waiting now' : ''}${about ? `\n${about}` : ''}`,
  }, el('span', { class: 'dot' }), agent.name, about ? el('span', { class: 'about' }, about) : null);
}
