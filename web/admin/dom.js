// dom.js — a small, safe element builder for the admin console.
//
// Every piece of text goes in through textContent (never innerHTML): payloads, replies and
// user messages are hostile input. Attributes are set with setAttribute, and no attribute
// whose name starts with "on" is accepted (no inline handlers; the CSP forbids them anyway).

const SVG_NS = 'http://www.w3.org/2000/svg';

function apply(node, props) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (/^on/i.test(key)) throw new Error(`inline handler ${key} refused; use on()`);
    if (key === 'class') node.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'text') node.textContent = String(value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** el('div', {class: 'x'}, 'text', child, [more]) — an HTML element. */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  apply(node, props);
  append(node, children);
  return node;
}

/** svg('rect', {x: 1}) — an SVG element. */
export function svg(tag, props, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  apply(node, props);
  append(node, children);
  return node;
}

/** on(node, 'click', fn) — adds a listener and returns the node. */
export function on(node, type, handler) {
  node.addEventListener(type, handler);
  return node;
}

/** Empties a node and puts children into it. */
export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}
