// dialog.js — a modal dialog: <dialog> opened with showModal (the page behind is inert),
// focus kept inside (Tab and Shift+Tab wrap), Escape and the close button close it, and focus
// goes back to the element that opened it.

import { el, on } from './dom.js';

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex]:not([tabindex="-1"]), summary';

/** Rendered and not inside a closed <details> (its content is neither shown nor tabbable). */
function visible(node) {
  if (node.tagName !== 'SUMMARY' && node.closest('details:not([open])')) return false;
  return typeof node.checkVisibility === 'function' ? node.checkVisibility() : node.offsetParent !== null;
}

/** Opens a modal titled `title` holding `content`; returns {dialog, close}. */
export function openDialog({ title, content, opener, className }) {
  const titleId = `dialog-title-${Date.now()}`;
  const close = el('button', { type: 'button', class: 'dialog-close', 'aria-label': 'Close' }, '×');
  const dialog = el('dialog', { class: ['modal', className], 'aria-labelledby': titleId, 'aria-modal': 'true' },
    el('div', { class: 'dialog-head' }, el('h2', { id: titleId }, title), close),
    el('div', { class: 'dialog-body' }, content));
  const finish = () => {
    if (dialog.open) dialog.close();
  };
  on(close, 'click', finish);
  on(dialog, 'close', () => {
    dialog.remove();
    if (opener && document.contains(opener)) opener.focus();
  });
  // A click on the backdrop (the dialog element itself, outside its content) closes it.
  on(dialog, 'click', (event) => {
    if (event.target === dialog) finish();
  });
  on(dialog, 'keydown', (event) => {
    if (event.key !== 'Tab') return;
    const items = [...dialog.querySelectorAll(FOCUSABLE)].filter(visible);
    if (!items.length) return;
    const first = items[0];
    const last = items[items.length - 1];
    if (!items.includes(document.activeElement)) {
      event.preventDefault();
      (event.shiftKey ? last : first).focus();
    } else if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
  return { dialog, close: finish };
}
