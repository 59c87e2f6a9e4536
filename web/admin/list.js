// list.js — the conversations list: the API's filters (user, contract, from, to, q,
// has_invalid, blocked, request_id), kept in the URL, and real pagination (offset, limit, total).

import { api } from './client.js';
import { fillContracts } from '../shared/contracts.js';
import { el, on, replace } from './dom.js';
import { number, shortId, time, toLocalInput, fromLocalInput } from './format.js';
import { statusBadge } from './badges.js';
import { href, navigate } from './router.js';

const FILTERS = ['user', 'contract', 'from', 'to', 'q', 'has_invalid', 'blocked', 'request_id'];
const SIZES = [20, 50, 100];
const CONTRACTS = ['selfhelp-response', 'table-chat', 'question-cards', 'topic-analysis'];

/** The API query from the route's parameters (only known names; numbers checked). */
export function listQuery(params) {
  const q = {};
  for (const name of FILTERS) {
    const v = params.get(name);
    if (v) q[name] = v;
  }
  for (const name of ['from', 'to']) if (q[name] && !/^\d+$/.test(q[name])) delete q[name];
  for (const name of ['has_invalid', 'blocked']) if (q[name] && !['true', 'false'].includes(q[name])) delete q[name];
  const limit = Number(params.get('limit'));
  q.limit = SIZES.includes(limit) ? limit : 20;
  const offset = Number(params.get('offset'));
  q.offset = Number.isInteger(offset) && offset > 0 ? offset : 0;
  return q;
}

function field(label, control, hint) {
  return el('div', { class: 'field' }, el('label', { for: control.id }, label), control, hint || null);
}

function select(id, value, options) {
  const s = el('select', { id, name: id });
  for (const [v, label] of options) s.append(el('option', { value: v, selected: v === (value || '') }, label));
  return s;
}

function filterForm(q) {
  const input = (id, type, value, extra) => el('input', { id, name: id, type, value: value ?? '', ...extra });
  const contracts = el('datalist', { id: 'contract-names' }, CONTRACTS.map((c) => el('option', { value: c })));
  fillContracts(api.plain(), contracts);
  const form = el('form', { class: 'filters card', role: 'search', 'aria-label': 'Filter conversations' },
    field('Text in any message', input('q', 'search', q.q, { placeholder: 'words…' })),
    field('Request id', input('request_id', 'search', q.request_id, { autocomplete: 'off', maxlength: '128', placeholder: 'x-request-id a user quotes' })),
    field('User', input('user', 'text', q.user, { autocomplete: 'off' })),
    field('Contract', input('contract', 'text', q.contract, { list: 'contract-names', autocomplete: 'off' })), contracts,
    field('Created from', input('from', 'datetime-local', toLocalInput(q.from))),
    field('Created before', input('to', 'datetime-local', toLocalInput(q.to))),
    field('Invalid attempts', select('has_invalid', q.has_invalid, [['', 'any'], ['true', 'with invalid attempts'], ['false', 'none invalid']])),
    field('Status', select('blocked', q.blocked, [['', 'any'], ['true', 'blocked'], ['false', 'active']])),
    field('Per page', select('limit', String(q.limit), SIZES.map((n) => [String(n), String(n)]))),
    el('div', { class: 'actions' },
      el('button', { type: 'submit', class: 'primary' }, 'Apply'),
      el('a', { class: 'button', href: href('conversations') }, 'Clear')));
  on(form, 'submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const params = {};
    for (const name of ['q', 'request_id', 'user', 'contract', 'has_invalid', 'blocked', 'limit']) {
      const v = String(data.get(name) || '').trim();
      if (v) params[name] = v;
    }
    for (const name of ['from', 'to']) {
      const ms = fromLocalInput(String(data.get(name) || ''));
      if (ms !== undefined) params[name] = String(ms);
    }
    navigate('conversations', params);
  });
  // On a phone the filters fold away (open when some are set); on a wide screen they stay open.
  const active = FILTERS.filter((name) => q[name]).length;
  const wide = window.matchMedia('(min-width: 641px)').matches;
  return el('details', { class: 'filter-box', open: wide || active > 0 },
    el('summary', {}, active ? `Filters (${active} set)` : 'Filters'), form);
}

function table(items) {
  const head = ['Conversation', 'User', 'Contract', 'Status', 'Messages', 'Invalid', 'Created', 'Updated'];
  const rows = items.map((c) => el('tr', { 'data-id': c.id, class: c.invalid_count > 0 ? 'has-invalid' : null },
    el('td', { 'data-label': 'Conversation' }, el('a', { href: href(`conversations/${encodeURIComponent(c.id)}`), title: c.id, class: 'mono' }, shortId(c.id))),
    el('td', { 'data-label': 'User' }, c.user_id),
    el('td', { 'data-label': 'Contract' }, c.contract),
    el('td', { 'data-label': 'Status' }, statusBadge(c.status)),
    el('td', { 'data-label': 'Messages', class: 'num' }, number(c.message_count)),
    el('td', { 'data-label': 'Invalid', class: 'num' }, c.invalid_count > 0 ? el('span', { class: 'badge badge--invalid' }, number(c.invalid_count)) : '0'),
    el('td', { 'data-label': 'Created' }, time(c.created_at)),
    el('td', { 'data-label': 'Updated' }, time(c.updated_at))));
  return el('div', { class: 'table-wrap' },
    el('table', { class: 'conversations responsive' },
      el('caption', { class: 'visually-hidden' }, 'Conversations, newest first'),
      el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, rows)));
}

function pager(q, total) {
  const first = total === 0 ? 0 : q.offset + 1;
  const last = Math.min(q.offset + q.limit, total);
  const page = Math.floor(q.offset / q.limit) + 1;
  const pages = Math.max(1, Math.ceil(total / q.limit));
  const go = (offset) => {
    const params = Object.fromEntries(Object.entries(q).map(([k, v]) => [k, String(v)]));
    params.offset = String(offset);
    if (offset === 0) delete params.offset;
    return href('conversations', params);
  };
  const link = (label, offset, enabled, rel) => enabled
    ? el('a', { class: 'button', href: go(offset), rel }, label)
    : el('span', { class: 'button disabled', 'aria-disabled': 'true' }, label);
  return el('nav', { class: 'pager', 'aria-label': 'Pages' },
    link('← Newer', Math.max(0, q.offset - q.limit), q.offset > 0, 'prev'),
    el('span', { class: 'pager-info', id: 'pager-info' }, `${number(first)}–${number(last)} of ${number(total)} · page ${page} of ${pages}`),
    link('Older →', q.offset + q.limit, q.offset + q.limit < total, 'next'));
}

export async function renderList(view, params, current) {
  const q = listQuery(params);
  const page = await api.conversations(q);
  if (!current()) return;
  document.title = 'Conversations · Bridle admin';
  replace(view,
    el('h1', {}, 'Conversations'),
    filterForm(q),
    el('p', { class: 'muted total', id: 'total' }, `${number(page.total)} conversation${page.total === 1 ? '' : 's'} match.`),
    page.items.length ? table(page.items) : el('p', { class: 'empty card' }, 'No conversation matches these filters.'),
    pager(q, page.total));
}
