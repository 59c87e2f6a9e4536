// copy.js — copy buttons. The text a button copies is also kept in its data-copy-text
// attribute (what it would copy, readable without clipboard access).

import { el, on } from './dom.js';

async function write(text) {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Fall through to the selection fallback (no permission, insecure context).
    }
  }
  const area = el('textarea', { readonly: true, class: 'offscreen', 'aria-hidden': 'true' });
  area.value = text;
  (document.querySelector('dialog[open]') || document.body).append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

/** A button that copies `text`; `status` is an element (a live region) told the result. */
export function copyButton(label, text, status) {
  const button = el('button', { type: 'button', class: 'copy', dataset: { copyText: text } }, label);
  on(button, 'click', async () => {
    const ok = await write(text);
    button.dataset.copied = ok ? 'true' : 'false';
    if (status) status.textContent = ok ? `${label}: copied.` : `${label}: the browser refused; select the text below and copy it.`;
  });
  return button;
}
