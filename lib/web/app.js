// The web view: a live feed of records, filters, and a record view. It reads
// only through the hub's public doors (SPEC §9). With an agent name and key
// it follows the signed SSE stream; the key stays in this tab (memory, or
// sessionStorage if the person asks) and only ever signs requests here.

import { listRelays, recordBytes } from './api.js';
import { byId, el } from './dom.js';
import { Feed } from './feed.js';
import { POLL_MS, startPolling, startSignedStream } from './live.js';
import { isRecordId, learnIdWidth, readFile } from './record.js';
import { showRecord } from './record-view.js';
import { sha256Hex } from './sha256.js';

const PAGE = 100;
const READ_CONCURRENCY = 4;
const CREDENTIAL_KEY = 'p-e-relay.credential';
const AGENT_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const feed = new Feed(byId('feed-rows'));
const present = new Set(); // every id the hub says it holds
const missing = new Set(); // KNOWN_MISSING ids
let floor = null; // the lowest id the feed shows; null while it shows everything
let highest = null; // the highest id seen held: where the live sources resume
let stopLive = () => {};

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
  for (const id of list.present) noteHeld(id);
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
    byId('count').textContent = filtering
      ? `${feed.visibleCount()} of ${feed.size} loaded records match`
      : `${feed.size} of ${present.size} held records shown`;
    byId('empty').hidden = feed.size > 0;
    byId('no-match').hidden = !(feed.size > 0 && filtering && feed.visibleCount() === 0);
    for (const key of ['from', 'to', 'kind']) {
      byId(`${key}-values`).replaceChildren(...feed.valuesOf(key).map((value) => el('option', { value })));
    }
  }, 50);
}

// --- live updates ---------------------------------------------------------------

function setStatus(mode, text) {
  const status = byId('live-status');
  status.dataset.mode = mode;
  status.replaceChildren(el('span', { class: 'dot' }), text);
}

function poll(note = '') {
  stopLive();
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
  let reconcile = null;
  const stop = await startSignedStream({
    agent,
    key,
    mark: () => highest,
    onRecord: (meta) => {
      if (!isRecordId(meta.id)) return;
      noteHeld(meta.id);
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
    onState: (state, detail) => {
      if (state === 'connecting') setStatus('connecting', `Opening the signed stream as ${agent}…`);
      else if (state === 'live') {
        setStatus('live', `Live: following the signed event stream as ${agent}.`);
        // Anything that landed while no stream was open (or below the mark) shows up here.
        listRelays().then((list) => applyList(list, { full: true }), () => {});
      } else if (state === 'reconnecting') setStatus('reconnecting', `The stream dropped (${detail}); reopening with a fresh signature…`);
      else if (state === 'refused') {
        sessionStorage.removeItem(CREDENTIAL_KEY);
        byId('key-form').classList.remove('connected');
        poll(`The hub refused the key for ${agent}: ${detail} `);
      }
    },
  });
  stopLive = () => {
    clearTimeout(reconcile);
    stop();
  };
}

// --- the key form ------------------------------------------------------------------

function connected(agent) {
  byId('key-form').classList.add('connected');
  byId('signed-as').textContent = agent;
}

function wireKeyForm() {
  const form = byId('key-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const agent = byId('agent').value.trim();
    const key = byId('key').value.trim();
    if (!AGENT_SHAPE.test(agent) || !key) {
      setStatus(byId('live-status').dataset.mode ?? 'polling', 'Enter an agent name (letters, digits, . _ -) and its key.');
      return;
    }
    byId('key').value = '';
    if (byId('remember').checked) sessionStorage.setItem(CREDENTIAL_KEY, JSON.stringify({ agent, key }));
    else sessionStorage.removeItem(CREDENTIAL_KEY);
    connected(agent);
    follow(agent, key);
  });
  byId('forget').addEventListener('click', () => {
    sessionStorage.removeItem(CREDENTIAL_KEY);
    form.classList.remove('connected');
    poll();
  });
}

function savedCredential() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(CREDENTIAL_KEY) ?? 'null');
    if (saved && AGENT_SHAPE.test(saved.agent) && typeof saved.key === 'string') return saved;
  } catch {
    // nothing usable saved
  }
  return null;
}

// --- filters, kept in the address so a filtered view can be shared too ---------------

function wireFilters() {
  const params = new URLSearchParams(location.search);
  const read = () => Object.fromEntries(['from', 'to', 'kind'].map((key) => [key, byId(`filter-${key}`).value.trim()]));
  for (const key of ['from', 'to', 'kind']) {
    byId(`filter-${key}`).value = params.get(key) ?? '';
    byId(`filter-${key}`).addEventListener('input', apply);
  }
  byId('clear-filters').addEventListener('click', () => {
    for (const key of ['from', 'to', 'kind']) byId(`filter-${key}`).value = '';
    apply();
  });
  function apply() {
    const filters = read();
    feed.setFilters(filters);
    const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v)).toString();
    history.replaceState(null, '', `${location.pathname}${query ? `?${query}` : ''}${location.hash}`);
    refreshCounts();
  }
  feed.setFilters(read());
}

// --- the record view, driven by the address (#relay-0042) ---------------------------

function route() {
  const id = decodeURIComponent(location.hash.slice(1));
  const pane = byId('record-pane');
  document.body.classList.toggle('with-record', id !== '');
  pane.hidden = id === '';
  feed.select(id || null);
  if (id) showRecord(pane, id);
  else pane.replaceChildren();
}

// --- start -------------------------------------------------------------------------------

wireFilters();
wireKeyForm();
byId('older').addEventListener('click', showOlder);
window.addEventListener('hashchange', route);
setStatus('connecting', 'Loading the list…');
// The record view waits for the list: it teaches the page the store's id width.
loadInitial().then(
  () => {
    route();
    const saved = savedCredential();
    if (saved) {
      byId('agent').value = saved.agent;
      byId('remember').checked = true;
      connected(saved.agent);
      follow(saved.agent, saved.key);
    } else poll();
  },
  (err) => {
    route();
    poll(`The list could not be loaded (${err.message}). `);
  },
);
