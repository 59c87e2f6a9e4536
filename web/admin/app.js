// app.js — the admin console's entry: sign-in, the hash router and the page shell.
//
// Routes: #/conversations?filters (list.js), #/conversations/ID (timeline.js),
// #/stats?range (stats.js). Each view is a function (main, params) → Promise.

import { api, ApiError, storedKey, storeKey, forgetKey } from './client.js';
import { el, on, replace } from './dom.js';
import { renderList } from './list.js';
import { renderConversation } from './timeline.js';
import { renderStats } from './stats.js';
import { currentRoute, navigate } from './router.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');

function signIn(message) {
  nav.hidden = true;
  delete document.body.dataset.signedIn;
  const input = el('input', { id: 'admin-key', name: 'key', type: 'password', autocomplete: 'current-password', required: true, spellcheck: 'false' });
  const error = el('p', { id: 'sign-in-error', class: 'error', role: 'alert' }, message || '');
  const button = el('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = el('form', { id: 'signin', class: 'sign-in card', 'aria-labelledby': 'sign-in-title' },
    el('h1', { id: 'sign-in-title' }, 'Sign in'),
    el('p', { class: 'muted' }, 'The console reads the admin API with an admin key (BRIDLE_ADMIN_KEY, or the key printed on first start).'),
    el('label', { for: 'admin-key' }, 'Admin key'), input,
    el('p', { class: 'muted small' }, 'The key is kept for this tab only.'),
    error, button);
  on(form, 'submit', async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    button.disabled = true;
    error.textContent = '';
    try {
      await api.check(key);
      storeKey(key);
      if (!currentRoute().path.length) navigate('conversations');
      route();
    } catch (e) {
      error.textContent = e.status === 401 ? 'This key is not known to the gateway.'
        : e.status === 403 ? 'This is a user key; the console needs an admin key.'
          : e.message;
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
  replace(main, form);
  document.title = 'Sign in · Bridle admin';
  input.focus();
}

function markSection(section) {
  for (const link of nav.querySelectorAll('a')) {
    if (link.dataset.section === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

let generation = 0;

async function route() {
  if (!storedKey()) return signIn();
  nav.hidden = false;
  document.body.dataset.signedIn = 'true';
  const { path, params } = currentRoute();
  const mine = ++generation;
  const view = el('div', { class: 'view', 'aria-busy': 'true' }, el('p', { class: 'muted loading' }, 'Loading…'));
  replace(main, view);
  try {
    if (path[0] === 'stats') {
      markSection('stats');
      await renderStats(view, params, () => mine === generation);
    } else if (path[0] === 'conversations' && path[1]) {
      markSection('conversations');
      await renderConversation(view, path[1], () => mine === generation);
    } else {
      markSection('conversations');
      await renderList(view, params, () => mine === generation);
    }
  } catch (e) {
    if (mine !== generation) return;
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
      forgetKey();
      return signIn('The admin key was refused; sign in again.');
    }
    replace(view, el('div', { class: 'card error-card', role: 'alert' },
      el('h1', {}, e.status === 404 ? 'Not found' : 'Something went wrong'), el('p', {}, e.message)));
  } finally {
    view.removeAttribute('aria-busy');
  }
}

on(document.getElementById('sign-out'), 'click', () => {
  forgetKey();
  signIn();
});
// The skip link moves focus without touching the hash (the hash is the route).
on(document.querySelector('.skip'), 'click', (event) => {
  event.preventDefault();
  main.focus();
});
on(window, 'hashchange', route);
route();
