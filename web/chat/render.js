// Turns a reply's value into DOM, whatever the contract kind (recognised by the value's shape):
// selfhelp-response JSON (content.text_blocks …), markers (message + suggestions + payload),
// text with question cards (message + question_cards), the XML topic analysis (response +
// analysis); anything else is shown as JSON.
//
// Exports:
//   renderValue(value, ctx)  ctx: {send(text, answers), interactive, partial, decision,
//       appState, answered}. A partial value (streaming) shows only what is safe to show
//       half-written: text and progress, no form, no buttons that send. appState: the turn's
//       application state (a data proposal's old values); answered: the answers by id the next
//       message gave the reply's cards (history: the cards show answered).
//   pickSuggestion(item, text, send)  what a chip does: send its text, or open a safe link
//       for `navigate` / `external_link`

import { el, markdown, safeUrl } from '../shared/dom.js';
import { chips, media, progress, textBlocks } from './blocks.js';
import { renderCards } from './cards.js';
import { renderForm } from './forms.js';
import { renderProposal } from './markers.js';
import { safetyBanner } from './safety.js';

export function pickSuggestion(item, text, send) {
  const action = item && typeof item === 'object' ? item.action : undefined;
  if ((action === 'navigate' || action === 'external_link') && item.value) {
    const url = safeUrl(item.value, ['http:', 'https:']);
    if (url) {
      window.open(url, '_blank', 'noopener,noreferrer');
      return;
    }
  }
  // A chip's value, when it has one, is what it means ("All of them" sends "Tell me about all
  // of them"); its text is only its label.
  const value = item && typeof item === 'object' && typeof item.value === 'string' ? item.value.trim() : '';
  send(value && (!action || action === 'send_message') ? value : text);
}

function selfhelp(value, ctx) {
  const content = value.content ?? {};
  const safety = value.safety && typeof value.safety === 'object' ? value.safety : null;
  const parts = [];
  if (!ctx.partial && (safety?.danger_level || ctx.decision)) parts.push(safetyBanner(ctx.decision, safety));
  parts.push(textBlocks(content.text_blocks));
  if (!ctx.partial) {
    parts.push(media(content.media));
    if (content.form && typeof content.form === 'object') {
      parts.push(renderForm(content.form, { onSubmit: ctx.send, interactive: ctx.interactive }));
    }
  }
  parts.push(progress(value.progress));
  if (!ctx.partial) {
    parts.push(chips(content.suggestions, (item, text) => pickSuggestion(item, text, ctx.send), 'Suggestions', ctx.interactive));
  }
  return parts;
}

function markers(value, ctx) {
  return [
    el('div', { class: 'message-text' }, markdown(value.message ?? '')),
    value.payload ? renderProposal(value.payload, { interactive: ctx.interactive && !ctx.partial, appState: ctx.appState }) : null,
    chips(value.suggested_values, (item) => ctx.send(String(item?.value ?? item?.label ?? item)), 'Suggested values', ctx.interactive && !ctx.partial),
    chips(
      value.suggested_actions,
      (item) => window.dispatchEvent(new CustomEvent('bridle:action', { detail: item })),
      'Actions',
      ctx.interactive && !ctx.partial,
    ),
  ];
}

function cards(value, ctx) {
  return [
    el('div', { class: 'message-text' }, markdown(value.message ?? '')),
    renderCards(value.question_cards, { onSubmit: ctx.send, interactive: ctx.interactive && !ctx.partial, answered: ctx.answered }),
  ];
}

function topic(value) {
  const analysis = value.analysis && typeof value.analysis === 'object' ? value.analysis : {};
  const subjects = Array.isArray(analysis.subject) ? analysis.subject : [];
  const attr = (o, k) => o?.[`@${k}`] ?? o?.[k];
  return [
    el('div', { class: 'message-text' }, markdown(typeof value.response === 'string' ? value.response : '')),
    subjects.length || analysis.summaryUpdate
      ? el(
          'details',
          { class: 'topic' },
          el('summary', { text: `Topic analysis (${subjects.length} subject${subjects.length === 1 ? '' : 's'})` }),
          el(
            'ul',
            {},
            subjects.map((s) => {
              const keywords = (Array.isArray(s.keyword) ? s.keyword : []).map((k) => `${attr(k, 'term')} (${attr(k, 'confidence')})`);
              return el(
                'li',
                {},
                el('strong', { text: attr(s, 'name') ?? '' }),
                attr(s, 'isNew') === true ? [' ', el('span', { class: 'badge', text: 'new' })] : null,
                ` — ${attr(s, 'description') ?? ''}`,
                keywords.length ? el('div', { class: 'muted', text: keywords.join(', ') }) : null,
              );
            }),
          ),
          analysis.summaryUpdate ? el('p', { text: `Summary: ${analysis.summaryUpdate}` }) : null,
        )
      : null,
  ];
}

export function renderValue(value, ctx) {
  const context = { send: () => false, interactive: true, partial: false, decision: null, appState: null, answered: null, ...ctx };
  let parts;
  if (value && typeof value === 'object' && value.content && typeof value.content === 'object') {
    parts = selfhelp(value, context);
  } else if (value && typeof value === 'object' && 'question_cards' in value) {
    parts = cards(value, context);
  } else if (value && typeof value === 'object' && ('payload' in value || 'suggested_values' in value || 'suggested_actions' in value)) {
    parts = markers(value, context);
  } else if (value && typeof value === 'object' && 'response' in value) {
    parts = topic(value);
  } else if (value && typeof value === 'object' && typeof value.message === 'string') {
    parts = [el('div', { class: 'message-text' }, markdown(value.message))];
  } else if (typeof value === 'string') {
    parts = [el('div', { class: 'message-text' }, markdown(value))];
  } else {
    parts = [el('pre', {}, el('code', { text: JSON.stringify(value, null, 2) ?? '' }))];
  }
  return el('div', { class: 'reply' }, parts);
}
