// The feed: one table row per record, newest (highest id) first. Rows appear
// as soon as an id is known and fill in when the record's bytes arrive (the
// deposit time lives only in the file's header, so every row reads its file;
// the hub serves them from disk, a few at a time).

import { el, localTime } from './dom.js';

const FILTERED = ['from', 'to', 'kind'];

export class Feed {
  constructor(tbody) {
    this.tbody = tbody;
    this.rows = new Map(); // id → { tr, meta, cells }
    this.filters = { from: '', to: '', kind: '', text: '' };
    /** The ids the hub found for the search (filters.text), or null while it has not answered. */
    this.found = null;
    this.selected = null;
  }

  has(id) {
    return this.rows.has(id);
  }

  get size() {
    return this.rows.size;
  }

  /** The lowest id shown, for "show older". */
  lowest() {
    let low = null;
    for (const id of this.rows.keys()) if (low === null || id < low) low = id;
    return low;
  }

  /** Adds a row for id (once); `fresh` marks a record that arrived while the page was open. */
  add(id, { fresh = false } = {}) {
    if (this.rows.has(id)) return false;
    const cells = {
      id: el('td', { class: 'id' }, el('a', { href: `#${id}` }, id)),
      kind: el('td', { class: 'kind pending' }, '…'),
      from: el('td', { class: 'from pending' }, '…'),
      to: el('td', { class: 'to pending' }, '…'),
      depositedBy: el('td', { class: 'by pending' }, '…'),
      provenance: el('td', { class: 'prov pending' }, '…'),
      depositedAt: el('td', { class: 'time pending' }, '…'),
    };
    const tr = el('tr', { 'data-id': id, class: fresh ? 'fresh' : null }, ...Object.values(cells));
    tr.addEventListener('click', (e) => {
      if (e.target instanceof HTMLAnchorElement) return;
      location.hash = id;
    });
    this.rows.set(id, { tr, cells, meta: null });
    // Ids are fixed width, so string order is issue order: insert before the first lower id.
    let before = null;
    for (const other of this.tbody.children) {
      if (other.dataset.id < id) {
        before = other;
        break;
      }
    }
    this.tbody.insertBefore(tr, before);
    if (id === this.selected) tr.classList.add('selected');
    this.applyTo(id);
    return true;
  }

  /** Fills a row from what the record's file says (any field may be null). */
  fill(id, meta) {
    const row = this.rows.get(id);
    if (!row) return;
    row.meta = { ...row.meta, ...meta };
    for (const key of ['kind', 'from', 'to', 'depositedBy', 'provenance']) {
      if (!(key in meta)) continue;
      const cell = row.cells[key];
      cell.classList.remove('pending');
      cell.classList.toggle('none', meta[key] === null);
      cell.textContent = meta[key] ?? '—';
    }
    if ('depositedAt' in meta) {
      const cell = row.cells.depositedAt;
      cell.classList.remove('pending');
      cell.replaceChildren(el('time', { datetime: meta.depositedAt, title: meta.depositedAt }, localTime(meta.depositedAt)));
    }
    if (meta.problem) {
      row.cells.depositedAt.classList.remove('pending');
      row.cells.depositedAt.append(el('span', { class: 'badge bad', title: meta.problem }, meta.problemLabel ?? 'damaged'));
    }
    this.applyTo(id);
  }

  /**
   * from, to and kind are case-insensitive substrings; a row not yet read is
   * hidden while any is set. The search is the hub's: a row shows while a
   * search is set only if the hub found it (setFound).
   */
  setFilters(filters) {
    if (filters.text !== this.filters.text) this.found = null;
    this.filters = filters;
    for (const id of this.rows.keys()) this.applyTo(id);
  }

  /** The hub's answer to the search: the ids it found. */
  setFound(ids) {
    this.found = new Set(ids);
    for (const id of this.rows.keys()) this.applyTo(id);
  }

  applyTo(id) {
    const row = this.rows.get(id);
    const active = FILTERED.filter((key) => this.filters[key]);
    const matches = active.every((key) => {
      const value = row.meta?.[key];
      return typeof value === 'string' && value.toLowerCase().includes(this.filters[key].toLowerCase());
    });
    row.tr.hidden = !matches || (this.filters.text !== '' && !this.found?.has(id));
  }

  visibleCount() {
    let n = 0;
    for (const { tr } of this.rows.values()) if (!tr.hidden) n++;
    return n;
  }

  /** Distinct values seen in a column, for the filter's suggestions. */
  valuesOf(key) {
    const values = new Set();
    for (const { meta } of this.rows.values()) if (meta?.[key]) values.add(meta[key]);
    return [...values].sort();
  }

  select(id) {
    this.rows.get(this.selected)?.tr.classList.remove('selected');
    this.selected = id;
    this.rows.get(id)?.tr.classList.add('selected');
  }
}
