// timeline.js — one conversation as an admin sees it: its facts, unblock, safety events, and
// every turn with every attempt (badges, the retry banner, violations, repairs, payload, replay).

import { api } from './client.js';
import { el, on, replace } from './dom.js';
import { json, number, time } from './format.js';
import { attemptBadge, attemptOutcome, levelBadge, routeBadge, statusBadge } from './badges.js';
import { openPayload } from './payload.js';
import { replayControls } from './replay.js';
import { announce, href } from './router.js';

/** Messages grouped by turn, in stored order. */
export function turns(messages) {
  const byTurn = new Map();
  for (const m of messages) {
    if (!byTurn.has(m.turn_id)) byTurn.set(m.turn_id, []);
    byTurn.get(m.turn_id).push(m);
  }
  return [...byTurn.values()];
}

/** How a turn ended, in words. */
function turnSummary(messages) {
  const attempts = messages.filter((m) => m.role === 'assistant' && !m.is_fallback);
  const fallback = messages.some((m) => m.is_fallback);
  const valid = attempts.find((m) => m.is_validated);
  const n = `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`;
  if (valid) return `${n} · ${valid.attempt === 1 || attempts.length === 1 ? 'valid at first try' : 'valid after retry'}`;
  if (fallback) return `${n} · fallback returned`;
  return attempts.length ? `${n} · no valid reply` : 'no reply stored';
}

function retryBanner(message, next) {
  const outcome = attemptOutcome(message);
  if (outcome === 'valid') return null;
  let text;
  if (outcome === 'fallback') {
    text = 'Fallback: the attempts ran out, so Bridle returned the contract\'s fallback. It is not a valid reply.';
  } else if (outcome === 'cancelled') {
    text = 'The client went away while this attempt was streaming; the upstream request was cancelled.';
  } else {
    const why = outcome === 'error' ? 'The provider call failed'
      : outcome === 'aborted' ? 'Stopped early while streaming: what had arrived already broke the contract'
        : 'This attempt failed validation';
    const moved = next?.route === 'escalated' ? `, escalated to model ${next.model ?? '?'}`
      : next?.route === 'failover' ? `, failed over to model ${next.model ?? '?'}` : '';
    const then = next && !next.is_fallback && outcome === 'error' ? ` — Bridle tried again (attempt ${next.attempt ?? '?'}${moved}).`
      : next && !next.is_fallback ? ` — it was a retry trigger: Bridle sent the violations back and tried again (attempt ${next.attempt ?? '?'}${moved}).`
      : next && next.is_fallback ? ' — it was the last attempt; the fallback followed.'
        : ' — no further attempt was stored.';
    text = `Retry: ${why}${then}`;
  }
  return el('p', { class: 'retry-banner', role: 'note' }, el('span', { 'aria-hidden': 'true' }, '⚠ '), text);
}

function violationList(violations) {
  if (!violations?.length) return null;
  return el('div', { class: 'violations' },
    el('h4', {}, `Violations (${violations.length})`),
    el('ul', {}, violations.map((v) => el('li', {},
      el('code', { class: 'path' }, v.path || '/'), ' ',
      el('span', { class: 'rule' }, v.rule), ' ',
      el('span', { class: 'v-message' }, v.message)))));
}

function repairList(repairs) {
  if (!repairs?.length) return null;
  return el('div', { class: 'repairs' },
    el('h4', {}, `Repairs (${repairs.length})`),
    el('ul', {}, repairs.map((r) => el('li', {},
      el('span', { class: 'rule' }, r.kind), r.count > 1 ? ` ×${r.count}` : '', ' ',
      el('span', { class: 'v-message' }, r.message || '')))));
}

function facts(pairs) {
  return el('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', {}, v))));
}

/** The safety assessment a reply carried (selfhelp-response's /safety), when it names a danger. */
function safetyLine(value) {
  const s = value && typeof value === 'object' ? value.safety : null;
  if (!s || typeof s !== 'object' || !s.danger_level) return null;
  const concerns = Array.isArray(s.detected_concerns) && s.detected_concerns.length ? ` (${s.detected_concerns.join(', ')})` : '';
  return el('p', { class: 'safety-line' }, el('strong', {}, 'Safety: '), levelBadge(String(s.danger_level)), concerns,
    s.requires_intervention ? ' · requires intervention' : '');
}

/** The ids of the request a turn ran for, and the link to its trace when the gateway has a
 * trace UI configured (`[telemetry] trace_url_template`, with `{trace_id}`). */
function turnIds(messages, template) {
  const withId = messages.find((m) => m.request_id || m.trace_id);
  if (!withId) return null;
  const traceId = withId.trace_id && /^[0-9a-f]{32}$/.test(withId.trace_id) ? withId.trace_id : null;
  const url = traceId && typeof template === 'string' && /^https?:\/\//.test(template)
    ? template.split('{trace_id}').join(traceId) : null;
  return el('p', { class: 'turn-ids muted' },
    withId.request_id ? ['Request id ', el('code', { class: 'request-id' }, withId.request_id)] : null,
    withId.request_id && traceId ? ' · ' : null,
    traceId && url ? el('a', { class: 'trace-link', href: url, target: '_blank', rel: 'noopener noreferrer' }, `Trace ${traceId}`)
      : traceId ? ['Trace ', el('code', { class: 'trace-id' }, traceId)] : null);
}

/** The facts a turn ran under (its page, mode, …) in one line, and the whole context below. */
function turnContext(context) {
  if (!context || typeof context !== 'object') return null;
  const line = Object.entries(context)
    .filter(([, v]) => typeof v === 'string')
    .map(([k, v]) => `${k}: ${v.length > 40 ? `${v.slice(0, 40)}…` : v}`)
    .join(' · ');
  return el('details', { class: 'turn-context' },
    el('summary', {}, line ? `Context — ${line}` : 'Context'),
    el('pre', { class: 'json' }, json(context)));
}

function userMessage(m) {
  return el('article', { class: 'message message--user', id: `m-${m.id}`, 'aria-label': 'User message' },
    el('header', {}, el('span', { class: 'who' }, 'User'), el('time', {}, time(m.created_at))),
    el('p', { class: 'user-text' }, m.content),
    turnContext(m.context));
}

function attemptCard(m, next) {
  const outcome = attemptOutcome(m);
  const label = m.is_fallback ? 'Fallback' : `Attempt ${m.attempt ?? '?'}`;
  const payloadButton = el('button', { type: 'button', class: 'payload-button' }, 'Payload');
  if (m.request_payload) on(payloadButton, 'click', () => openPayload(m, payloadButton));
  else payloadButton.disabled = true;
  const replay = replayControls(m);
  return el('article', {
    class: ['message', 'attempt', `attempt--${outcome}`, outcome === 'valid' ? null : 'attempt--failed'],
    id: `m-${m.id}`, 'data-message-id': m.id, 'aria-label': `${label}: ${outcome}`,
  },
  el('header', {}, attemptBadge(m), routeBadge(m), el('span', { class: 'who' }, label), el('time', {}, time(m.created_at))),
  retryBanner(m, next),
  facts([
    ['Model', m.model], ['Provider', m.provider],
    ['Upstream model', m.request_payload?.body?.model ?? null],
    ['Tokens in / out', m.tokens_in == null && m.tokens_out == null ? null : `${number(m.tokens_in)} / ${number(m.tokens_out)}`],
    ['Latency', m.latency_ms == null ? null : `${number(m.latency_ms)} ms`],
    ['Contract', m.contract_version ? `${m.contract} ${m.contract_version}` : m.contract],
    ['Message id', String(m.id)],
  ]),
  safetyLine(m.value),
  m.error ? el('p', { class: 'provider-error' }, el('strong', {}, 'Error: '), m.error) : null,
  violationList(m.violations),
  repairList(m.repairs),
  el('h4', {}, m.is_fallback ? 'Fallback returned to the user' : m.error ? 'Error text stored' : 'Reply as received'),
  el('pre', { class: 'reply', tabindex: '0' }, m.content),
  m.value !== null && m.value !== undefined
    ? el('details', { class: 'value' }, el('summary', {}, 'Parsed value'), el('pre', { class: 'json' }, json(m.value)))
    : null,
  m.raw_response ? el('details', { class: 'raw' }, el('summary', {}, 'Raw provider response'), el('pre', { class: 'json' }, json(m.raw_response))) : null,
  m.payload_purged_at ? el('p', { class: 'purged muted' }, `Request payload and raw response purged by the retention policy at ${time(m.payload_purged_at)}; this attempt cannot be replayed.`) : null,
  m.request_payload || m.payload_purged_at
    ? el('div', { class: 'attempt-actions' }, payloadButton, replay.button)
    : null,
  replay.panel);
}

function safetySection(events, messages) {
  const ids = new Set(messages.map((m) => m.id));
  const body = events.length
    ? el('div', { class: 'table-wrap' }, el('table', { class: 'safety responsive' },
      el('thead', {}, el('tr', {}, ['When', 'Level', 'Concerns', 'Action', 'Notified', 'Message'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, events.map((e) => el('tr', { 'data-action': e.action },
        el('td', { 'data-label': 'When' }, time(e.created_at)),
        el('td', { 'data-label': 'Level' }, levelBadge(e.level)),
        el('td', { 'data-label': 'Concerns' }, Array.isArray(e.concerns) ? e.concerns.join(', ') || '—' : json(e.concerns)),
        el('td', { 'data-label': 'Action' }, e.action),
        el('td', { 'data-label': 'Notified' }, e.notified_at ? time(e.notified_at) : (e.action === 'log' ? '—' : el('span', { class: 'warn' }, 'not notified'))),
        el('td', { 'data-label': 'Message' }, e.message_id && ids.has(e.message_id) ? jumpButton(e.message_id) : (e.message_id ?? '—')))))))
    : el('p', { class: 'muted' }, 'No safety events.');
  return el('section', { class: 'card safety-events', 'aria-labelledby': 'safety-title' },
    el('h2', { id: 'safety-title' }, `Safety events (${events.length})`), body);
}

/** A button that scrolls to a message (hash links would change the route). */
function jumpButton(id) {
  return on(el('button', { type: 'button', class: 'link' }, `#${id}`), 'click', () => {
    const target = document.getElementById(`m-${id}`);
    if (!target) return;
    target.setAttribute('tabindex', '-1');
    target.scrollIntoView({ behavior: 'smooth', block: 'start' });
    target.focus({ preventScroll: true });
  });
}

function header(detail, rerender) {
  const c = detail.conversation;
  const unblock = c.status === 'blocked'
    ? on(el('button', { type: 'button', class: 'primary danger', id: 'unblock' }, 'Unblock conversation'), 'click', async (event) => {
      const button = event.currentTarget;
      button.disabled = true;
      button.textContent = 'Unblocking…';
      try {
        await api.unblock(c.id);
        announce('The conversation is unblocked: its user can send messages again.', 'ok');
        await rerender();
      } catch (e) {
        announce(`Unblocking failed: ${e.message}`, 'error');
        button.disabled = false;
        button.textContent = 'Unblock conversation';
      }
    })
    : null;
  const assistant = detail.messages.filter((m) => m.role === 'assistant');
  const invalid = assistant.filter((m) => !m.is_validated).length;
  return el('section', { class: 'card conversation-head' },
    el('p', { class: 'crumbs' }, el('a', { href: href('conversations') }, '← Conversations'), ' ',
      on(el('button', { type: 'button', class: 'reload' }, 'Reload'), 'click', async (event) => {
        const button = event.currentTarget;
        button.disabled = true;
        try {
          await rerender();
          announce('Reloaded.', 'ok');
        } catch (e) {
          announce(`Reloading failed: ${e.message}`, 'error');
          button.disabled = false;
        }
      })),
    el('h1', {}, 'Conversation ', el('span', { class: 'mono id' }, c.id)),
    el('div', { class: 'status-line' }, statusBadge(c.status),
      c.status === 'blocked' ? el('span', { class: 'muted' }, 'Blocked by the safety policy: new messages get 423 with the crisis text until an admin unblocks it.') : null,
      unblock),
    facts([
      ['User', c.user_id], ['Contract', c.contract], ['Created', time(c.created_at)], ['Updated', time(c.updated_at)],
      ['Messages', number(detail.messages.length)], ['Invalid attempts', number(invalid)],
    ]),
    el('details', { class: 'context' }, el('summary', {}, 'Context and state'),
      el('h4', {}, 'Context'), el('pre', { class: 'json' }, json(c.context)),
      el('h4', {}, 'State'), el('pre', { class: 'json' }, json(c.state))));
}

export async function renderConversation(view, id, current) {
  const detail = await api.conversation(id);
  if (!current()) return;
  const rerender = async () => {
    const fresh = await api.conversation(id);
    if (current()) draw(fresh);
  };
  const draw = (d) => {
    document.title = `Conversation ${id} · Bridle admin`;
    const groups = turns(d.messages);
    replace(view,
      header(d, rerender),
      safetySection(d.safety_events || [], d.messages),
      el('section', { class: 'timeline', 'aria-labelledby': 'timeline-title' },
        el('h2', { id: 'timeline-title' }, `Timeline · ${groups.length} turn${groups.length === 1 ? '' : 's'}`),
        groups.length ? groups.map((messages, i) => el('section', { class: 'turn', 'aria-label': `Turn ${i + 1}`, 'data-turn': messages[0].turn_id },
          el('h3', {}, `Turn ${i + 1}`, el('span', { class: 'muted turn-summary' }, ` · ${turnSummary(messages)}`)),
          turnIds(messages, d.trace_url_template),
          messages.map((m, j) => (m.role === 'user' ? userMessage(m) : attemptCard(m, messages.slice(j + 1).find((n) => n.role === 'assistant'))))))
          : el('p', { class: 'muted' }, 'No messages yet.')));
  };
  draw(detail);
}
