// replay.js — "Replay" on an attempt: the stored request is sent again (POST
// /admin/v1/messages/{id}/replay; nothing is stored) and the answer's check is shown beside the
// original outcome.

import { api } from './client.js';
import { el, on, replace } from './dom.js';
import { json, number, time } from './format.js';

function outcomeBadge(valid, label) {
  return el('span', { class: ['badge', valid ? 'badge--valid' : 'badge--invalid'] }, `${label}${valid ? 'Valid' : 'Invalid'}`);
}

function list(title, items, line) {
  if (!items?.length) return null;
  return el('div', {}, el('h5', {}, title), el('ul', {}, items.map((x) => el('li', {}, line(x)))));
}

export function replayResult(r) {
  const check = r.check;
  const verdict = r.error
    ? el('span', { class: 'badge badge--error', 'data-outcome': 'error' }, 'Provider error')
    : check ? el('span', { class: ['badge', check.valid ? 'badge--valid' : 'badge--invalid'], 'data-outcome': check.valid ? 'valid' : 'invalid' }, check.valid ? 'Valid' : 'Invalid')
      : el('span', { class: 'badge badge--muted', 'data-outcome': 'unchecked' }, 'Not checked');
  return [
    el('h4', {}, 'Replay result ', verdict, ' ', outcomeBadge(r.original?.valid, 'original: ')),
    el('dl', { class: 'facts' },
      el('div', {}, el('dt', {}, 'At'), el('dd', {}, time(Date.now()))),
      el('div', {}, el('dt', {}, 'Provider'), el('dd', {}, r.provider)),
      el('div', {}, el('dt', {}, 'Model'), el('dd', {}, r.model || '—')),
      el('div', {}, el('dt', {}, 'Latency'), el('dd', {}, `${number(r.latency_ms)} ms`)),
      r.usage ? el('div', {}, el('dt', {}, 'Usage'), el('dd', { class: 'mono' }, JSON.stringify(r.usage))) : null),
    r.error ? el('p', { class: 'provider-error' }, el('strong', {}, 'Error: '), r.error) : null,
    check ? list('Violations', check.violations, (v) => [el('code', { class: 'path' }, v.path || '/'), ' ', el('span', { class: 'rule' }, v.rule), ' ', v.message]) : null,
    check ? list('Repairs', check.repairs, (x) => [el('span', { class: 'rule' }, x.kind), x.count > 1 ? ` ×${x.count}` : '', ' ', x.message || '']) : null,
    r.original && !r.original.valid
      ? list('Original attempt\'s violations', r.original.violations, (v) => [el('code', { class: 'path' }, v.path || '/'), ' ', el('span', { class: 'rule' }, v.rule), ' ', v.message])
      : null,
    r.content !== null && r.content !== undefined ? [el('h5', {}, 'Answer'), el('pre', { class: 'reply replay-content', tabindex: '0' }, r.content)] : null,
    check?.value ? el('details', {}, el('summary', {}, 'Parsed value'), el('pre', { class: 'json' }, json(check.value))) : null,
    el('p', { class: 'muted' }, 'Replays are not stored: the conversation stays what its user got.'),
  ];
}

/** {button, panel} for an assistant message; the button is disabled when nothing can be replayed. */
export function replayControls(message) {
  const panel = el('div', { class: 'replay-panel', hidden: true, 'aria-live': 'polite' });
  const button = el('button', { type: 'button', class: 'replay-button' }, 'Replay');
  if (!message.request_payload) {
    button.disabled = true;
    button.title = message.payload_purged_at ? 'The stored request was purged' : 'No stored request';
    return { button, panel };
  }
  on(button, 'click', async () => {
    button.disabled = true;
    button.textContent = 'Replaying…';
    panel.hidden = false;
    panel.setAttribute('aria-busy', 'true');
    replace(panel, el('p', { class: 'muted' }, 'Sending the stored request again…'));
    try {
      const result = await api.replay(message.id);
      replace(panel, replayResult(result));
      panel.dataset.state = 'done';
    } catch (e) {
      replace(panel, el('p', { class: 'error', role: 'alert' }, `Replay refused (${e.status || 'network'}): ${e.message}`));
      panel.dataset.state = 'error';
    } finally {
      panel.removeAttribute('aria-busy');
      button.disabled = false;
      button.textContent = 'Replay again';
    }
  });
  return { button, panel };
}
