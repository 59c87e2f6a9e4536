// Safe DOM helpers shared by the chat page and the admin console.
//
// Exports:
//   el(tag, attrs?, ...children)  build an element; strings become text nodes (never HTML);
//                                 attrs: class, text, dataset {}, on<Event>: function, other
//                                 attributes via setAttribute ("on…" strings and unsafe
//                                 href/src values are refused)
//   text(value)                   a Text node of String(value)
//   clear(node)                   remove every child; returns node
//   safeUrl(url, schemes?)        url if its scheme is allowed (default http, https, mailto;
//                                 relative URLs resolve against the page), else null
//   markdown(source)              a DocumentFragment for a safe Markdown subset (markdown.js)
//   liveMarkdown(container)       the same for text that grows while it streams: update(text)
//                                 redoes only the blocks it can still change (markdown.js)
//   formatTime(ms)                a short local date-time for a Unix-ms timestamp
//
// Nothing here ever assigns innerHTML: model and user text only reaches the page as text nodes.

export { liveMarkdown, markdown } from './markdown.js';

const URL_ATTRIBUTES = new Set(['href', 'src', 'action', 'formaction', 'poster', 'xlink:href']);

export function text(value) {
  return document.createTextNode(value == null ? '' : String(value));
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function safeUrl(url, schemes = ['http:', 'https:', 'mailto:']) {
  if (typeof url !== 'string' || url.trim() === '') return null;
  let parsed;
  try {
    parsed = new URL(url.trim(), document.baseURI);
  } catch {
    return null;
  }
  return schemes.includes(parsed.protocol) ? parsed.href : null;
}

function append(parent, child) {
  if (child == null || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child) append(parent, c);
  } else if (child instanceof Node) {
    parent.appendChild(child);
  } else {
    parent.appendChild(text(child));
  }
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (key === 'class') {
      node.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value;
    } else if (key === 'text') {
      node.textContent = String(value);
    } else if (key === 'dataset') {
      for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
    } else if (key.startsWith('on')) {
      if (typeof value !== 'function') throw new TypeError(`el: ${key} must be a function`);
      node.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (URL_ATTRIBUTES.has(key.toLowerCase())) {
      const safe = key === 'src' ? safeUrl(value, ['http:', 'https:', 'data:']) : safeUrl(value);
      if (safe) node.setAttribute(key, safe);
    } else if (value === true) {
      node.setAttribute(key, '');
    } else {
      node.setAttribute(key, String(value));
    }
  }
  append(node, children);
  return node;
}

export function formatTime(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  return new Date(ms).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });
}
