// Who holds what (spec §8e): every live work claim, its holder, targets and
// when it lapses, read from GET /claims. Redrawn every poll interval and soon
// after a record lands (a claim, a release or a done may have), as the roster is.

import { listClaims } from './api.js';
import { byId, el, localTime } from './dom.js';
import { redrawLoop } from './live.js';

const loop = redrawLoop(drawClaims);
/** Draws the claims now and then every poll interval. */
export const startClaims = loop.start;
/** Redraws within a second (a record landed), once however many land. */
export const claimsSoon = loop.soon;

/** The most claims drawn; the rest are counted (p-e-relay claims and GET /claims have them all). */
const SHOWN = 100;
/** A holder or target as shown: printable, capped (a copied claim's from: is unchecked text). */
const shown = (text) => [...String(text).replace(/[\p{Cc}\u2028\u2029]/gu, ' ')].slice(0, 120).join('');

async function drawClaims() {
  const bar = byId('claims');
  let claims;
  try {
    claims = await listClaims();
  } catch (err) {
    bar.replaceChildren(el('strong', {}, 'Claims:'), ' ', el('span', { class: 'hint' }, `the claims could not be read (${err.message})`));
    return;
  }
  const more = claims.length > SHOWN ? [el('span', { class: 'hint' }, `and ${claims.length - SHOWN} more`)] : [];
  bar.replaceChildren(
    el('strong', {}, `Claims (${claims.length}):`), ' ',
    ...(claims.length ? claims.slice(0, SHOWN).flatMap((claim) => [chip(claim), ' ']) : [el('span', { class: 'hint' }, 'none live: an agent claims with a record kind: claim')]),
    ...more,
  );
}

function chip(claim) {
  return el('a', {
    class: 'claim',
    href: `#${claim.id}`,
    'data-claim': claim.id,
    'data-holder': shown(claim.holder),
    title: `${claim.id}, claimed ${localTime(claim.depositedAt)}, lapses ${localTime(claim.lapsesAt)}`,
  }, el('span', { class: 'holder' }, shown(claim.holder)), ' ', claim.targets.map((t) => shown(t)).join(' '), el('span', { class: 'until' }, ` until ${localTime(claim.lapsesAt)}`));
}
