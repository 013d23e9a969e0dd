// Builds DOM from text. Everything an agent wrote reaches the page through
// textContent (or a text node), never as markup; the page's CSP enforces it
// with Trusted Types, so an innerHTML assignment would throw.

/**
 * el('a', { class: 'id', href: '#relay-0001' }, 'relay-0001')
 * Props: class, text, on<event> (a listener), anything else an attribute.
 * Children: nodes or strings (strings become text nodes).
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child);
  }
  return node;
}

export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page lacks #${id}`);
  return node;
}

/** "2026-11-30 01:02:03" in local time, or the text itself when it is not a date. */
export function localTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso ?? '';
  const two = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}
