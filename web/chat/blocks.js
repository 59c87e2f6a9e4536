// The parts of a selfhelp-response reply (shared spec 01) except the form: text blocks in their
// seven types and five styles, media, the progress bar and suggestion chips.
//
// Exports:
//   textBlock(block)            one block: text, heading, info, warning, error, success, code;
//                               styles default, bold, italic, code, quote
//   textBlocks(blocks)          a container of them
//   media(items)                images, videos and audio with alt text and captions
//                               (https:, data: and same-origin URLs only)
//   progress(progress)          a labelled <progress> bar with topics, or null
//   chips(items, onPick, label) a group of suggestion buttons; onPick(item) on click

import { el, markdown } from '../shared/dom.js';

const CALLOUTS = { info: 'Info', warning: 'Warning', error: 'Error', success: 'Success' };

function styled(content, style) {
  if (style === 'code') return el('pre', {}, el('code', { text: content }));
  const body = markdown(content);
  return style === 'quote' ? el('blockquote', {}, body) : body;
}

export function textBlock(block) {
  const type = typeof block?.type === 'string' ? block.type : 'text';
  const content = typeof block?.content === 'string' ? block.content : '';
  const style = typeof block?.style === 'string' ? block.style : 'default';
  const classes = ['block', `block-${type}`, `style-${style}`];
  if (type === 'heading') {
    const h = el('h3', { class: 'block-heading' });
    // A heading is one line of inline Markdown.
    const frag = markdown(content.replace(/\n+/g, ' '));
    const first = frag.firstChild;
    if (first) h.append(...first.childNodes);
    return el('div', { class: classes }, style === 'quote' ? el('blockquote', {}, h) : h);
  }
  if (type === 'code') {
    return el('div', { class: classes }, el('pre', {}, el('code', { text: content })));
  }
  if (CALLOUTS[type]) {
    return el(
      'div',
      { class: [...classes, 'callout', type], role: type === 'error' || type === 'warning' ? 'alert' : 'note' },
      el('span', { class: 'visually-hidden callout-label', text: `${CALLOUTS[type]}:` }),
      styled(content, style),
    );
  }
  return el('div', { class: classes }, styled(content, style));
}

export function textBlocks(blocks) {
  const list = Array.isArray(blocks) ? blocks : [];
  return el('div', { class: 'text-blocks' }, list.map(textBlock));
}

function mediaUrl(url) {
  if (typeof url !== 'string' || url.trim() === '') return null;
  let parsed;
  try {
    parsed = new URL(url.trim(), document.baseURI);
  } catch {
    return null;
  }
  if (parsed.protocol === 'https:' || parsed.protocol === 'data:') return parsed.href;
  if (parsed.origin === window.location.origin) return parsed.href;
  return null;
}

function mediaItem(item) {
  const alt = typeof item?.alt === 'string' ? item.alt : '';
  const caption = typeof item?.caption === 'string' && item.caption ? el('figcaption', { text: item.caption }) : null;
  const url = mediaUrl(item?.url);
  let body;
  if (!url) {
    body = el('p', { class: 'muted', text: `[${item?.type || 'media'} not shown: unsupported address]${alt ? ` ${alt}` : ''}` });
  } else if (item.type === 'video') {
    body = el('video', { src: url, controls: true, preload: 'metadata', 'aria-label': alt || caption?.textContent || 'video' });
  } else if (item.type === 'audio') {
    body = el('audio', { src: url, controls: true, preload: 'metadata', 'aria-label': alt || caption?.textContent || 'audio' });
  } else {
    body = el('img', { src: url, alt });
  }
  return el('figure', { class: ['media', `media-${item?.type || 'image'}`] }, body, caption);
}

export function media(items) {
  if (!Array.isArray(items) || items.length === 0) return null;
  return el('div', { class: 'media-list' }, items.map(mediaItem));
}

export function progress(p) {
  if (!p || typeof p !== 'object') return null;
  const pct = Number.isFinite(p.percentage) ? Math.max(0, Math.min(100, p.percentage)) : null;
  const parts = [];
  if (pct !== null) parts.push(`${Math.round(pct)}%`);
  if (p.current_topic) parts.push(`current topic: ${p.current_topic}`);
  const lines = [];
  if (Array.isArray(p.topics_covered) && p.topics_covered.length) lines.push(`Covered: ${p.topics_covered.join(', ')}`);
  if (Array.isArray(p.topics_remaining) && p.topics_remaining.length) lines.push(`Remaining: ${p.topics_remaining.join(', ')}`);
  if (Array.isArray(p.milestones_reached) && p.milestones_reached.length) lines.push(`Milestones: ${p.milestones_reached.join(', ')}`);
  const id = `progress-${Math.random().toString(36).slice(2, 9)}`;
  return el(
    'div',
    { class: 'progress' },
    el('span', { id, text: `Progress${parts.length ? `: ${parts.join(' · ')}` : ''}` }),
    pct !== null ? el('progress', { max: '100', value: String(pct), 'aria-labelledby': id }) : null,
    lines.map((line) => el('span', { class: 'muted', text: line })),
  );
}

export function chips(items, onPick, label = 'Suggestions', interactive = true) {
  if (!Array.isArray(items) || items.length === 0) return null;
  return el(
    'div',
    { class: 'chips', role: 'group', 'aria-label': label },
    items.map((item) => {
      const text = typeof item === 'string' ? item : item?.text ?? item?.label ?? '';
      return el('button', {
        type: 'button',
        class: ['chip', item?.action && item.action !== 'send_message' ? 'action' : null],
        text,
        disabled: !interactive,
        onclick: () => onPick(item, text),
      });
    }),
  );
}
