// router.js — hash routes and the status line shared by every view.

import { el, replace } from './dom.js';

/** Parses location.hash into {path: ['conversations', 'id'], params: URLSearchParams}. */
export function currentRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, search = ''] = raw.split('?');
  return { path: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(search) };
}

/** The href of a route. */
export function href(path, params) {
  const search = params ? new URLSearchParams(params).toString() : '';
  return `#/${path}${search ? `?${search}` : ''}`;
}

/** Goes to a route (adds a history entry). */
export function navigate(path, params) {
  location.hash = href(path, params);
}

let timer;

/** A short message in the live region (read out by screen readers), cleared after a while. */
export function announce(text, kind = 'info') {
  const notice = document.getElementById('notice');
  replace(notice, el('p', { class: ['notice', `notice--${kind}`] }, text));
  clearTimeout(timer);
  timer = setTimeout(() => notice.replaceChildren(), 8000);
}
