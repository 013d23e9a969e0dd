// The feed's filters by from, to and kind, and the search box (text, which
// the hub answers), kept in the address (/?from=scout-7&text=disk) so a
// filtered view can be shared too.

import { byId } from './dom.js';

const KEYS = ['from', 'to', 'kind', 'text'];

/** Wires the filter inputs; onChange(filters) now and on every edit. */
export function wireFilters(onChange) {
  const params = new URLSearchParams(location.search);
  const read = () => Object.fromEntries(KEYS.map((key) => [key, byId(`filter-${key}`).value.trim()]));
  const apply = () => {
    const filters = read();
    const query = new URLSearchParams(Object.entries(filters).filter(([, value]) => value)).toString();
    history.replaceState(null, '', `${location.pathname}${query ? `?${query}` : ''}${location.hash}`);
    onChange(filters);
  };
  for (const key of KEYS) {
    byId(`filter-${key}`).value = params.get(key) ?? '';
    byId(`filter-${key}`).addEventListener('input', apply);
  }
  byId('clear-filters').addEventListener('click', () => {
    for (const key of KEYS) byId(`filter-${key}`).value = '';
    apply();
  });
  onChange(read());
}
