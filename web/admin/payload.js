// payload.js — the payload popup of an attempt: the stored provider request formatted (where it
// went, the settings, each message sent, retry feedback included), the full JSON, and copy
// buttons for the JSON body and for a curl command that replays it.

import { el } from './dom.js';
import { json } from './format.js';
import { bodyJson, curlCommand, keyVariable } from './curl.js';
import { copyButton } from './copy.js';
import { openDialog } from './dialog.js';

/** The messages of a request body, whatever the provider's shape (OpenAI or Anthropic). */
export function requestMessages(body) {
  const out = [];
  if (!body || typeof body !== 'object') return out;
  if (body.system !== undefined) out.push({ role: 'system', content: body.system });
  for (const m of Array.isArray(body.messages) ? body.messages : []) out.push({ role: m?.role ?? '?', content: m?.content });
  return out;
}

function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.every((p) => p && typeof p.text === 'string')) return content.map((p) => p.text).join('\n');
  return json(content);
}

function settings(body) {
  const rows = Object.entries(body || {}).filter(([k]) => k !== 'messages' && k !== 'system');
  if (!rows.length) return null;
  return el('dl', { class: 'facts settings' }, rows.map(([k, v]) => el('div', {},
    el('dt', {}, k), el('dd', { class: 'mono' }, typeof v === 'object' ? JSON.stringify(v) : String(v)))));
}

export function payloadContent(message) {
  const payload = message.request_payload;
  const body = payload.body;
  const status = el('p', { class: 'copy-status', role: 'status', 'aria-live': 'polite' });
  const curl = curlCommand(payload);
  const messages = requestMessages(body);
  const mock = String(payload.url || '').startsWith('mock://');
  return [
    el('div', { class: 'copy-bar' },
      copyButton('Copy JSON', bodyJson(payload), status),
      copyButton('Copy as curl', curl, status)),
    status,
    el('dl', { class: 'facts' },
      el('div', {}, el('dt', {}, 'Provider'), el('dd', {}, payload.provider || '—')),
      el('div', {}, el('dt', {}, 'URL'), el('dd', { class: 'mono url' }, payload.url || '—'))),
    mock ? el('p', { class: 'muted' }, 'This attempt went to the in-process mock (no HTTP endpoint). Run `bridle mock-llm` and put its URL in the curl command to send it again.') : null,
    el('p', { class: 'muted' }, `Credentials are stored as [REDACTED]; the curl command reads the key from $${keyVariable(payload.provider)}.`),
    el('h3', {}, 'Headers'),
    el('dl', { class: 'facts headers' }, Object.entries(payload.headers || {}).map(([k, v]) => el('div', {}, el('dt', { class: 'mono' }, k), el('dd', { class: 'mono' }, String(v))))),
    el('h3', {}, 'Settings'),
    settings(body) || el('p', { class: 'muted' }, 'None.'),
    el('h3', {}, `Messages sent (${messages.length})`),
    el('ol', { class: 'request-messages' }, messages.map((m, i) => el('li', { class: `request-message role-${String(m.role).replace(/[^a-z]/g, '')}` },
      el('span', { class: 'role' }, String(m.role)),
      i === messages.length - 1 && message.attempt > 1 && m.role === 'user' ? el('span', { class: 'badge badge--invalid' }, 'retry feedback') : null,
      el('pre', { class: 'message-text', tabindex: '0' }, contentText(m.content))))),
    el('details', { class: 'full-json', open: true }, el('summary', {}, 'Request body (JSON)'),
      el('pre', { class: 'json payload-json', tabindex: '0' }, bodyJson(payload))),
    el('details', {}, el('summary', {}, 'curl command'), el('pre', { class: 'curl', tabindex: '0' }, curl)),
  ];
}

/** Opens the payload popup of an assistant message (an attempt with request_payload). */
export function openPayload(message, opener) {
  const label = message.is_fallback ? 'fallback' : `attempt ${message.attempt ?? '?'}`;
  return openDialog({
    title: `Request payload · ${label} (message ${message.id})`,
    content: payloadContent(message),
    opener,
    className: 'payload-dialog',
  });
}
