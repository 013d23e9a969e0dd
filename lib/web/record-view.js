// One record, opened from the feed or a shared link (/#relay-0042): its exact
// bytes with the deposit header, whether the digest checks out, its parent and
// refs (each checked with HEAD, so a missing one reads as missing rather than
// as a broken link), and its replies, one level at a time.

import { HubError, idState, listReplies, recordBytes } from './api.js';
import { el } from './dom.js';
import { isRecordId, readFile } from './record.js';
import { sha256Hex } from './sha256.js';

const STATE_WORDS = {
  PRESENT: 'held',
  KNOWN_MISSING: 'missing',
  UNKNOWN: 'unknown',
};
const STATE_SENTENCES = {
  KNOWN_MISSING: 'KNOWN_MISSING: a held record names this id, but the hub does not hold it. It may be lost, or not yet mirrored here.',
  UNKNOWN: 'UNKNOWN: no held record names this id and the hub does not hold it.',
};

let shown = 0; // the newest call wins; an older one still loading must not draw over it

/** Draws record `id` into `pane`. Resolves once the bytes and digest are shown (links and replies may still load). */
export async function showRecord(pane, id) {
  const token = ++shown;
  const current = () => token === shown;
  pane.replaceChildren(heading(id), el('p', { class: 'loading' }, 'Loading…'));
  if (!isRecordId(id)) {
    pane.replaceChildren(heading(id), el('p', { class: 'verdict bad' }, `"${id}" is not an id of this store.`));
    return;
  }
  let bytes;
  try {
    bytes = await recordBytes(id);
  } catch (err) {
    if (current()) await showAbsent(pane, id, err, current);
    return;
  }
  if (!current()) return;
  const file = readFile(bytes);
  if (!file) {
    pane.replaceChildren(heading(id), el('p', { class: 'verdict bad' },
      'This file has no "---" line ending its deposit header; it cannot be read as a record.'), bytesBlock('', new TextDecoder().decode(bytes)));
    return;
  }
  const actual = `sha256:${await sha256Hex(file.record)}`;
  if (!current()) return;
  const { deposit, claims } = file;
  const good = actual === deposit.digest;
  const links = el('dl', { class: 'links' });
  // Receipts are about this record, not its replies: a section of their own, above the replies' heading.
  const receipts = el('section', { class: 'receipts', hidden: true });
  pane.replaceChildren(
    heading(id, claims.kind),
    el('p', { class: `verdict ${good ? 'good' : 'bad'}`, 'data-digest': good ? 'good' : 'bad' },
      good ? '✓ Digest checks out: the bytes below the "---" line hash to the digest in the deposit header.'
        : `✗ Digest does not match: the header says ${deposit.digest ?? '(none)'}, the bytes hash to ${actual}.`),
    facts([
      ['kind', claims.kind], ['from', claims.from], ['to', claims.to],
      ['deposited by', deposit.depositedBy], ['provenance', deposit.provenance],
      ['deposited at', deposit.depositedAt], ['digest', deposit.digest],
      ...(deposit.idempotencyKey === null ? [] : [['idempotency key', deposit.idempotencyKey]]),
    ]),
    links,
    el('h3', {}, 'Exact bytes'),
    bytesBlock(file.headerText, file.recordText),
    receipts,
    el('h3', {}, 'Replies'),
    repliesOf(id, (answer) => fillReceipts(receipts, answer, claims)),
  );
  if (!claims.wellFormed) links.before(el('p', { class: 'note' }, 'The record\'s first line is not @p-e/x0, so it names no parent or refs.'));
  fillLinks(links, claims);
}

function heading(id, kind = null) {
  return el('header', { class: 'record-head' },
    el('h2', {}, id, kind ? el('span', { class: 'kind-tag' }, kind) : null),
    el('a', { href: `#${id}`, class: 'share', title: 'A link to this record' }, 'link'),
    el('a', { href: '#', class: 'close', title: 'Close', 'aria-label': 'Close' }, '×'));
}

function facts(pairs) {
  return el('dl', { class: 'facts' }, pairs.flatMap(([name, value]) => [
    el('dt', {}, name),
    el('dd', { class: value === null ? 'none' : null }, value ?? '—'),
  ]));
}

function bytesBlock(headerText, recordText) {
  return el('pre', { class: 'bytes', tabindex: 0 },
    el('span', { class: 'deposit' }, headerText),
    el('span', { class: 'body' }, recordText));
}

/** Parent and refs, each shown by its state: a link when held, a labelled id when not. */
function fillLinks(dl, claims) {
  const rows = [];
  if (claims.parent) rows.push(['parent', [claims.parent]]);
  if (claims.refs.length) rows.push(['refs', claims.refs]);
  if (!rows.length) return;
  for (const [name, ids] of rows) {
    dl.append(el('dt', {}, name), el('dd', {}, ids.map((id) => {
      const chip = el('span', { class: 'chip checking', 'data-ref': id }, id);
      idState(id).then((state) => chip.replaceWith(idChip(id, state)), () => chip.classList.remove('checking'));
      return chip;
    })));
  }
}

function idChip(id, state) {
  if (state === 'PRESENT') return el('a', { class: 'chip present', href: `#${id}`, 'data-ref': id, 'data-state': state }, id);
  return el('span', { class: `chip ${state === 'KNOWN_MISSING' ? 'missing' : 'unknown'}`, 'data-ref': id, 'data-state': state, title: STATE_SENTENCES[state] ?? state },
    id, el('span', { class: 'state' }, STATE_WORDS[state] ?? state));
}

/** An id the hub does not serve: say which state it is in, and who names it. */
async function showAbsent(pane, id, err, current) {
  const state = err instanceof HubError ? err.state : null;
  const lines = [heading(id)];
  if (state && STATE_SENTENCES[state]) {
    lines.push(el('p', { class: `verdict ${state === 'KNOWN_MISSING' ? 'missing' : 'unknown'}`, 'data-state': state }, STATE_SENTENCES[state]));
  } else {
    lines.push(el('p', { class: 'verdict bad', 'data-state': err?.code ?? 'error' }, err?.message ?? 'The hub could not serve this record.'));
  }
  if (state === 'KNOWN_MISSING') lines.push(el('h3', {}, 'Named by'), repliesOf(id));
  if (current()) pane.replaceChildren(...lines);
}

/** The records naming `id` in parent:/ref:, one level; each can be expanded to its own replies. `onAnswer` sees the whole answer. */
function repliesOf(id, onAnswer = () => {}) {
  const list = el('ul', { class: 'replies', 'data-parent': id }, el('li', { class: 'loading' }, 'Loading…'));
  listReplies(id).then(
    (answer) => {
      const { replies } = answer;
      list.replaceChildren(...(replies.length ? replies.map(replyItem) : [el('li', { class: 'none' }, 'No replies yet.')]));
      onAnswer(answer);
    },
    (err) => list.replaceChildren(el('li', { class: 'bad' }, err.message)),
  );
  return list;
}

/**
 * Receipts (spec §8d): which named recipients have had the record delivered
 * (`deliveredTo`, from their marks), and which it names that have not yet,
 * so "bob has it and has not answered" reads apart from "bob has not seen
 * it". The hub leaves deliveredTo out where no named agent keeps marks.
 */
function fillReceipts(section, answer, claims) {
  if (!Array.isArray(answer.deliveredTo)) return;
  const delivered = new Set(answer.deliveredTo);
  const named = (claims.to ?? '').split(/[\s,]+/).filter((name) => name && name !== 'all' && name !== claims.from);
  const waiting = named.filter((name) => !delivered.has(name));
  section.replaceChildren(el('h3', {}, 'Delivery'), el('p', {},
    el('strong', {}, 'Delivered to:'), ' ',
    ...(delivered.size ? [...delivered].map((name) => el('span', { class: 'receipt delivered', 'data-delivered': name }, `✓ ${name}`)) : [el('span', { class: 'hint' }, 'no one yet')]),
    ...(waiting.length ? [' ', el('strong', {}, 'not yet:'), ' ', ...waiting.map((name) => el('span', { class: 'receipt pending', 'data-pending': name }, name))] : []),
  ));
  section.hidden = false;
}

function replyItem(reply) {
  const item = el('li', { 'data-id': reply.id });
  const toggle = el('button', { type: 'button', class: 'expand', 'aria-expanded': 'false', title: 'Show the replies to this reply' }, '▸');
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') === 'true';
    toggle.setAttribute('aria-expanded', String(!open));
    toggle.textContent = open ? '▸' : '▾';
    if (open) item.querySelector(':scope > ul')?.remove();
    else item.append(repliesOf(reply.id));
  });
  item.append(toggle, el('a', { href: `#${reply.id}` }, reply.id),
    el('span', { class: 'meta' }, [reply.kind, reply.from && `from ${reply.from}`, reply.to && `to ${reply.to}`].filter(Boolean).join(' · ')));
  return item;
}
