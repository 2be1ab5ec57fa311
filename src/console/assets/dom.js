// Building the page's elements. Text always goes in as text nodes (never innerHTML): every
// value shown comes from the API, and some of it (status messages, tool names) from backends.

/** An element with attributes (`on*` keys become listeners) and children (strings or nodes). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else if (name === 'dataset') Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

/** An SVG element (the plots are drawn with these, by this page's own code). */
export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) node.setAttribute(name, String(value));
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/** Replaces a container's children. */
export function fill(container, ...children) {
  container.replaceChildren();
  append(container, children);
}

/** 93 s → "1m 33s"; for ages and lifetimes. */
export function duration(ms) {
  if (ms > 0 && ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function statusBadge(status) {
  return el('span', { class: `status ${status}` }, status);
}
