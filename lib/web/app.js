// The web view: a live feed of records, filters, and a record view. It reads
// only through the hub's public doors (spec §9). With an agent name and key
// it follows the signed SSE stream; the key stays in this tab (memory, or
// sessionStorage if the person asks) and only ever signs requests here.

import { listRelays, recordBytes } from './api.js';
import { forgetCredential, savedCredential, wireKeyForm } from './credential.js';
import { byId, el } from './dom.js';
import { Feed } from './feed.js';
import { wireFilters } from './filters.js';
import { POLL_MS, startPolling, startSignedStream } from './live.js';
import { isRecordId, learnIdWidth, readFile } from './record.js';
import { keyRefusalText } from './refusal.js';
import { showRecord } from './record-view.js';
import { claimsSoon, startClaims } from './claims.js';
import { rosterSoon, startRoster } from './roster.js';
import { frontierSoon, startFrontier } from './frontier.js';
import { sha256Hex } from './sha256.js';

const PAGE = 100;
const READ_CONCURRENCY = 4;

const feed = new Feed(byId('feed-rows'));
const present = new Set(); // every id the hub says it holds
const missing = new Set(); // KNOWN_MISSING ids
let floor = null; // the lowest id the feed shows; null while it shows everything
let highest = null; // the highest id seen held: where the live sources resume
let stopLive = () => {};
let following = null; // the agent whose signed stream is open, or null while polling
let searchProblem = null; // the hub's refusal of the search box's text, shown instead of the count

// --- reading records for their rows ----------------------------------------

const queue = [];
let reading = 0;
function readLater(id, { urgent = false } = {}) {
  if (urgent) queue.unshift(id);
  else queue.push(id);
  pump();
}
function pump() {
  while (reading < READ_CONCURRENCY && queue.length) {
    const id = queue.shift();
    reading++;
    readRow(id).finally(() => {
      reading--;
      pump();
      if (!reading && !queue.length) refreshCounts();
    });
  }
}
async function readRow(id) {
  try {
    const file = readFile(await recordBytes(id));
    if (!file) return feed.fill(id, { problem: 'The file has no "---" line ending its deposit header.' });
    const good = `sha256:${await sha256Hex(file.record)}` === file.deposit.digest;
    const { kind, from, to } = file.claims;
    const { depositedBy, provenance, depositedAt } = file.deposit;
    feed.fill(id, { kind, from, to, depositedBy, provenance, depositedAt, problem: good ? null : 'Its bytes do not match its digest.' });
  } catch (err) {
    feed.fill(id, { problem: err.message, problemLabel: err.code === 'damaged' ? 'damaged' : 'unreadable' });
  }
}

// --- what the hub holds ------------------------------------------------------

function noteHeld(id) {
  present.add(id);
  missing.delete(id);
  learnIdWidth(id);
  if (highest === null || id > highest) highest = id;
}

/** Applies a list answer. `full` lists everything, so known-missing ids that were filled drop out. */
function applyList(list, { full = false } = {}) {
  if (full) missing.clear();
  for (const id of list.knownMissing) {
    learnIdWidth(id);
    missing.add(id);
  }
  const fresh = list.present.filter((id) => !present.has(id));
  if (fresh.length && highest !== null) {
    rosterSoon();
    claimsSoon();
    frontierSoon();
  }
  for (const id of list.present) noteHeld(id);
  if (fresh.length && feed.filters.text) searchSoon(1000);
  for (const id of fresh.sort().reverse()) {
    if (floor !== null && id < floor) continue; // below the window: "show older" will reach it
    if (feed.add(id, { fresh: true })) readLater(id, { urgent: true });
  }
  drawMissing();
  refreshCounts();
}

async function loadInitial() {
  const list = await listRelays();
  for (const id of list.present) noteHeld(id);
  for (const id of list.knownMissing) missing.add(id);
  showOlder();
  drawMissing();
}

function showOlder() {
  const held = [...present].sort();
  const below = floor === null ? held : held.filter((id) => id < floor);
  const page = below.slice(-PAGE).reverse();
  for (const id of page) if (feed.add(id)) readLater(id);
  if (page.length) floor = page[page.length - 1];
  if (below.length <= PAGE) floor = null;
  byId('older').hidden = floor === null;
  refreshCounts();
}

function drawMissing() {
  const bar = byId('missing');
  const ids = [...missing].sort();
  bar.hidden = ids.length === 0;
  const shown = ids.slice(0, 30);
  bar.replaceChildren(
    el('strong', {}, `Known missing (${ids.length}):`), ' ',
    ...shown.flatMap((id) => [el('a', { href: `#${id}`, class: 'chip missing' }, id), ' ']),
    ids.length > shown.length ? `and ${ids.length - shown.length} more` : '',
    el('span', { class: 'hint' }, ' named by held records, not held here'));
}

let countsTimer = null;
function refreshCounts() {
  clearTimeout(countsTimer);
  countsTimer = setTimeout(() => {
    const filtering = Object.values(feed.filters).some(Boolean);
    byId('count').textContent = searchProblem
      ?? (filtering ? `${feed.visibleCount()} of ${feed.size} loaded records match` : `${feed.size} of ${present.size} held records shown`);
    byId('empty').hidden = feed.size > 0;
    byId('no-match').hidden = !(feed.size > 0 && filtering && feed.visibleCount() === 0);
    for (const key of ['from', 'to', 'kind']) {
      byId(`${key}-values`).replaceChildren(...feed.valuesOf(key).map((value) => el('option', { value })));
    }
  }, 50);
}

// --- the search box: the hub finds the records (GET /relays?text=), the feed shows them -----

const SEARCH_DELAY_MS = 300;
/** The newest matches given rows at once; older ones come with "show older" like any record. */
const SEARCH_ROWS = 200;
let searchTimer = null;
let searchSeq = 0;

/** Asks the hub again for the search box's words, soon (typing, or a record landed while a search is set). */
function searchSoon(delayMs = SEARCH_DELAY_MS) {
  clearTimeout(searchTimer);
  const text = feed.filters.text;
  searchProblem = null;
  if (!text) return refreshCounts();
  searchTimer = setTimeout(async () => {
    const seq = ++searchSeq;
    try {
      const list = await listRelays(null, { text });
      if (seq !== searchSeq) return; // a later search is under way
      for (const id of list.present.slice(-SEARCH_ROWS).reverse()) if (feed.add(id)) readLater(id);
      feed.setFound(list.present);
    } catch (err) {
      if (seq !== searchSeq) return;
      searchProblem = err.message; // bad_filter's sentence says what to type instead
      feed.setFound([]);
    }
    refreshCounts();
  }, delayMs);
}

// --- live updates ---------------------------------------------------------------

function setStatus(mode, text) {
  const status = byId('live-status');
  status.dataset.mode = mode;
  status.replaceChildren(el('span', { class: 'dot' }), text);
}

function poll(note = '') {
  stopLive();
  following = null;
  const polling = note
    ? `${note}Polling the list every ${POLL_MS / 1000} s instead.`
    : `Polling the list every ${POLL_MS / 1000} s (no key entered). Enter an agent name and key to follow the signed stream.`;
  setStatus('polling', polling);
  stopLive = startPolling({
    mark: () => highest,
    onList: (list, { full }) => {
      applyList(list, { full });
      setStatus('polling', polling);
    },
    onError: (err) => setStatus('error', `Polling: ${err.message} Trying again every ${POLL_MS / 1000} s.`),
  });
}

async function follow(agent, key) {
  stopLive();
  following = agent;
  let reconcile = null;
  const stop = await startSignedStream({
    agent,
    key,
    mark: () => highest,
    onRecord: (meta) => {
      if (!isRecordId(meta.id)) return;
      noteHeld(meta.id);
      rosterSoon();
      claimsSoon();
      if (feed.filters.text) searchSoon(1000);
      if (floor === null || meta.id > floor) {
        if (feed.add(meta.id, { fresh: true })) readLater(meta.id, { urgent: true });
        const { kind, from, to, depositedBy, provenance } = meta;
        feed.fill(meta.id, { kind, from, to, depositedBy, provenance });
      }
      // A new record may name ids that are not held: refresh the known-missing list soon.
      clearTimeout(reconcile);
      reconcile = setTimeout(() => listRelays().then((list) => applyList(list, { full: true }), () => {}), 1000);
      refreshCounts();
    },
    onState: (state, detail, code) => {
      if (state === 'connecting') setStatus('connecting', `Opening the signed stream as ${agent}…`);
      else if (state === 'live') {
        setStatus('live', `Live: following the signed event stream as ${agent}.`);
        // Anything that landed while no stream was open (or below the mark) shows up here.
        listRelays().then((list) => applyList(list, { full: true }), () => {});
      } else if (state === 'reconnecting') setStatus('reconnecting', `The stream dropped (${detail}); reopening with a fresh signature…`);
      else if (state === 'refused') {
        forgetCredential();
        poll(keyRefusalText(agent, code, detail));
      }
    },
  });
  stopLive = () => {
    clearTimeout(reconcile);
    stop();
  };
}

// --- the record view, driven by the address (#relay-0042) ---------------------------

function route() {
  let id = location.hash.slice(1);
  try {
    id = decodeURIComponent(id);
  } catch {
    // not percent-encoded text: shown as it is, and refused as no id
  }
  const pane = byId('record-pane');
  document.body.classList.toggle('with-record', id !== '');
  pane.hidden = id === '';
  feed.select(id || null);
  if (id) showRecord(pane, id);
  else pane.replaceChildren();
}

// --- start -------------------------------------------------------------------------------

wireFilters((filters) => {
  const searched = feed.filters.text;
  feed.setFilters(filters);
  if (filters.text !== searched) searchSoon();
  refreshCounts();
});
wireKeyForm({
  onConnect: follow,
  onForget: () => poll(),
  onInvalid: (sentence) => setStatus(byId('live-status').dataset.mode ?? 'polling', sentence),
});
byId('older').addEventListener('click', showOlder);
startRoster();
startClaims();
startFrontier();
window.addEventListener('hashchange', route);
setStatus('connecting', 'Loading the list…');
// The record view waits for the list: it teaches the page the store's id width.
loadInitial().then(
  () => {
    route();
    if (following) return; // a key was entered while the list loaded
    const saved = savedCredential();
    if (saved) follow(saved.agent, saved.key);
    else poll();
  },
  (err) => {
    route();
    if (!following) poll(`The list could not be loaded (${err.message}). `);
  },
);
