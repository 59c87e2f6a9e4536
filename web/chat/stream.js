// One turn, streamed: sends the message with Accept: text/event-stream and renders every event
// of docs/streaming.md into an assistant bubble as it arrives.
//
//   attempt_started   a fresh attempt (a note from the second on)
//   text_delta        text so far, rendered as Markdown        (markers, text); the blocks
//                     already finished are kept, only the open end is redone (liveMarkdown)
//   partial           the value so far: text blocks, progress (json, xml)
//   suggestions       suggestion chips, not yet clickable      (markers)
//   payload           the proposal table, not yet applicable   (markers)
//   attempt_failed    everything that attempt showed is removed; a note says why
//   question_card     the cards, not yet answerable
//   safety            the safety decision (banner; blocked state)
//   message_complete  the final value replaces it all, interactive; meta line
//   error             the turn ended without a reply
//
// Exports:
//   assistantBubble()  {node, body, notes, meta} — node carries data-state
//                      (streaming | complete | error) for styles and tests
//   streamTurn(api, conversationId, content, bubble, {send, onSafety, answer, context, appState})
//       answer: card answers by id (sent instead of content); context: this turn's context
//       (page, mode, app_state), merged over the conversation's; appState: the state the turn
//       runs under (a data proposal's old values). Resolves {value, decision} after
//       message_complete; rejects with the ApiError of a refused request (blocked 423, rate
//       limit 429, …) before any event

import { el, clear, liveMarkdown } from '../shared/dom.js';
import { chips } from './blocks.js';
import { renderCards } from './cards.js';
import { renderProposal } from './markers.js';
import { renderValue } from './render.js';
import { safetyBanner } from './safety.js';

const REASONS = {
  invalid: 'the reply broke the contract',
  aborted: 'stopped early: the reply already broke the contract',
  provider_error: 'the model could not be reached',
};

export function assistantBubble() {
  const notes = el('div', { class: 'attempt-notes' });
  const body = el('div', { class: 'body streaming' });
  const meta = el('div', { class: 'meta' });
  const node = el('li', { class: 'msg assistant', dataset: { state: 'streaming' }, 'aria-busy': 'true' }, notes, body, meta);
  return { node, body, notes, meta };
}

export async function streamTurn(api, conversationId, content, bubble, { send, onSafety, answer = null, context = null, appState = null } = {}) {
  let attempt = 0;
  let text = '';
  let partial = null;
  let extras = { suggestions: null, payload: null, cards: [] };
  let decision = null;
  let final = null;
  let failure = null;
  let timer = null;
  // The streamed text's element and its renderer, kept from one render to the next.
  let live = null;

  function renderLive() {
    timer = null;
    clear(bubble.body);
    if (partial !== null) {
      bubble.body.appendChild(renderValue(partial, { partial: true, interactive: false }));
    } else if (text) {
      if (live === null) {
        const node = el('div', { class: 'message-text' });
        live = { node, markdown: liveMarkdown(node) };
      }
      live.markdown.update(text);
      bubble.body.appendChild(live.node);
    }
    if (extras.payload) bubble.body.appendChild(renderProposal(extras.payload, { interactive: false, appState }));
    if (extras.suggestions) {
      const items = extras.suggestions.suggested_values ?? extras.suggestions.suggested_actions;
      const chipGroup = chips(items, () => {}, 'Suggestions', false);
      if (chipGroup) bubble.body.appendChild(chipGroup);
    }
    if (extras.cards.length) bubble.body.appendChild(renderCards(extras.cards, { interactive: false }));
  }
  const schedule = () => {
    if (timer === null) timer = setTimeout(renderLive, 30);
  };
  const resetAttempt = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    text = '';
    live = null;
    partial = null;
    extras = { suggestions: null, payload: null, cards: [] };
    clear(bubble.body);
  };

  const handlers = {
    attempt_started(data) {
      resetAttempt();
      attempt = data?.attempt ?? attempt + 1;
      bubble.node.dataset.attempt = String(attempt);
    },
    text_delta(data) {
      text += data?.text ?? '';
      schedule();
    },
    partial(data) {
      partial = data?.value ?? null;
      schedule();
    },
    suggestions(data) {
      extras.suggestions = data;
      schedule();
    },
    payload(data) {
      extras.payload = data;
      schedule();
    },
    attempt_failed(data) {
      // Whatever this attempt showed goes, at once.
      resetAttempt();
      const n = data?.attempt ?? attempt;
      const rules = (Array.isArray(data?.violations) ? data.violations : [])
        .slice(0, 3)
        .map((v) => `${v.rule}${v.path ? ` at ${v.path}` : ''}`);
      bubble.notes.appendChild(
        el('p', { class: 'attempt-note', dataset: { attempt: n } },
          `Attempt ${n} failed (${REASONS[data?.reason] ?? data?.reason ?? 'failed'}${rules.length ? `: ${rules.join(', ')}` : ''}); trying again…`),
      );
    },
    question_card(data) {
      if (data?.question_id) extras.cards.push(data);
      schedule();
    },
    safety(data) {
      decision = data;
      onSafety?.(data);
    },
    message_complete(data) {
      final = data;
    },
    error(data) {
      failure = data ?? {};
    },
  };

  // Card answers go by id (the server checks them against the cards it sent); anything else as text.
  const body = answer ? { answer } : { content };
  if (context) body.context = context;
  await api.stream(`/v1/conversations/${encodeURIComponent(conversationId)}/messages`, body, ({ event, data }) => {
    handlers[event]?.(data);
  });

  if (timer !== null) clearTimeout(timer);
  bubble.body.classList.remove('streaming');
  bubble.node.removeAttribute('aria-busy');
  clear(bubble.body);
  if (final) {
    const value = final.value;
    const reply = renderValue(value, { send, interactive: true, decision, appState });
    const isSelfhelp = value && typeof value === 'object' && value.content;
    if (decision && !isSelfhelp) {
      const banner = safetyBanner(decision, null);
      if (banner) bubble.body.appendChild(banner);
    }
    bubble.body.appendChild(reply);
    const attempts = final.attempts ?? attempt;
    const repairs = Array.isArray(final.repairs) ? final.repairs.length : 0;
    bubble.meta.textContent = [
      `${attempts} attempt${attempts === 1 ? '' : 's'}`,
      repairs ? `${repairs} repair${repairs === 1 ? '' : 's'}` : null,
      final.fallback ? 'fallback reply (every attempt failed)' : null,
    ].filter(Boolean).join(' · ');
    bubble.node.dataset.state = 'complete';
    return { value, decision };
  }
  const message = failure
    ? `No reply: ${failure.message || failure.code || 'the turn failed'}${typeof failure.request_id === 'string' ? ` (request id ${failure.request_id})` : ''}`
    : 'The connection ended before the reply was complete.';
  bubble.body.appendChild(el('div', { class: 'callout error', role: 'alert', text: message }));
  bubble.node.dataset.state = 'error';
  return { value: null, decision };
}
