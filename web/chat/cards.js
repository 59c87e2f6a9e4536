// Question cards (shared spec 04): the question, its rationale, 2–6 options (the recommended
// one marked), single choice or several up to max_selections, and a free-text answer.
//
// Exports:
//   renderCards(cards, {onSubmit, interactive})  one <form> for a message's cards;
//       onSubmit(text, answers): the readable text ("Question — chosen labels. free text",
//       a line per card, as the server writes it) and the answers by id
//       ([{question_id, option_ids, text?}], null when a card has no question_id) that the API
//       takes. A lone single-choice card is answered with one click on an option; otherwise
//       pick, then press the button. A card with neither a choice nor text shows an error
//       instead of sending. Once sent, the cards show as answered, the chosen options marked.
//       answered: answers by id given before (a conversation's history) — the cards are shown
//       answered with them, and take no new answer.

import { el } from '../shared/dom.js';

let seq = 0;

function cardNode(card) {
  seq += 1;
  const name = `card-${seq}`;
  const max = Number.isInteger(card.max_selections) && card.max_selections > 1 ? card.max_selections : 1;
  const multi = max > 1;
  const options = (Array.isArray(card.options) ? card.options : []).filter((o) => o && typeof o === 'object');
  const error = el('p', { class: 'field-error', id: `${name}-error`, 'aria-live': 'polite' });
  const inputs = [];
  const optionNodes = options.map((o, i) => {
    const input = el('input', {
      type: multi ? 'checkbox' : 'radio',
      name,
      value: o.id ?? `opt_${i + 1}`,
      'aria-describedby': o.description ? `${name}-d${i}` : null,
    });
    inputs.push({ input, option: o });
    return el(
      'label',
      { class: ['option', o.is_default ? 'recommended' : null] },
      input,
      el(
        'span',
        {},
        el('span', { class: 'label', text: o.label ?? '' }),
        o.is_default ? [' ', el('span', { class: 'badge', text: 'Recommended' })] : null,
        o.description ? el('span', { class: 'desc', id: `${name}-d${i}`, text: o.description }) : null,
      ),
    );
  });
  // Multi-select: at max_selections, the unchecked options are disabled.
  if (multi) {
    const limit = () => {
      const count = inputs.filter((x) => x.input.checked).length;
      for (const x of inputs) if (!x.input.checked) x.input.disabled = count >= max;
    };
    for (const x of inputs) x.input.addEventListener('change', limit);
  }
  const freeText = card.allow_free_text !== false
    ? el('input', {
        type: 'text',
        class: 'free-text',
        'aria-label': `Your own answer to: ${card.question_text ?? ''}`,
        placeholder: card.free_text_placeholder || 'Or type your own answer…',
      })
    : null;
  const node = el(
    'fieldset',
    { class: 'card', dataset: { questionId: card.question_id ?? '' }, 'aria-describedby': `${name}-error` },
    el('legend', { text: card.question_text ?? '' }),
    card.rationale ? el('p', { class: 'rationale', text: card.rationale }) : null,
    multi ? el('p', { class: 'muted hint', text: `Choose up to ${max}.` }) : null,
    el('div', { class: 'options', role: multi ? 'group' : 'radiogroup', 'aria-label': card.question_text ?? 'Options' }, optionNodes),
    freeText,
    error,
  );
  return {
    node,
    inputs,
    multi,
    question: card.question_text ?? '',
    questionId: card.question_id ?? null,
    /** The answer by id, as the API takes it; null without a question id. */
    ids() {
      if (!card.question_id) return null;
      const own = freeText?.value.trim() ?? '';
      const answer = {
        question_id: card.question_id,
        option_ids: inputs.filter((x) => x.input.checked).map((x) => x.input.value),
      };
      if (own) answer.text = own;
      return answer;
    },
    /** Shows an earlier answer by id: its options ticked, its free text filled in. */
    fill(answer) {
      const chosen = new Set(Array.isArray(answer?.option_ids) ? answer.option_ids : []);
      for (const x of inputs) x.input.checked = chosen.has(x.input.value);
      if (freeText && typeof answer?.text === 'string') freeText.value = answer.text;
    },
    /** Marks the card answered: its chosen options stand out. */
    answered() {
      node.classList.add('answered');
      node.dataset.answered = 'true';
      for (const x of inputs) if (x.input.checked) x.input.closest('label').classList.add('chosen');
    },
    /** The chosen labels ("; "), then the free text (". "): as the server writes an answer. */
    answer() {
      const chosen = inputs.filter((x) => x.input.checked).map((x) => x.option.label ?? '');
      const own = freeText?.value.trim() ?? '';
      return [chosen.join('; '), own].filter(Boolean).join('. ');
    },
    show(message) {
      error.textContent = message || '';
    },
    focus() {
      (inputs[0]?.input ?? freeText)?.focus();
    },
  };
}

export function renderCards(cards, { onSubmit, interactive = true, answered = null } = {}) {
  const list = (Array.isArray(cards) ? cards : []).filter((c) => c && typeof c === 'object');
  if (list.length === 0) return null;
  const built = list.map(cardNode);
  const status = el('p', { class: 'form-status', role: 'status' });
  const node = el(
    'form',
    { class: 'cards', novalidate: true, 'aria-label': 'Questions' },
    built.map((b) => b.node),
    el('div', {}, el('button', { type: 'submit', text: built.length > 1 ? 'Send answers' : 'Answer' })),
    status,
  );
  const disable = () => {
    for (const c of node.querySelectorAll('input, button')) c.disabled = true;
  };
  if (!interactive) disable();
  if (Array.isArray(answered) && answered.length) {
    for (const b of built) {
      const answer = answered.find((a) => a && a.question_id === b.questionId);
      if (!answer) continue;
      b.fill(answer);
      b.answered();
    }
    disable();
    status.textContent = 'Answered.';
  }
  // One click answers a lone single-choice card.
  if (built.length === 1 && !built[0].multi) {
    for (const x of built[0].inputs) {
      x.input.addEventListener('change', () => {
        if (x.input.checked) node.requestSubmit();
      });
    }
  }
  node.addEventListener('submit', (event) => {
    event.preventDefault();
    let firstBad = null;
    for (const b of built) {
      const missing = b.answer() === '';
      b.show(missing ? 'Choose an option or write an answer.' : '');
      if (missing && !firstBad) firstBad = b;
    }
    if (firstBad) {
      firstBad.focus();
      return;
    }
    // The text the server stores and the model reads for answers by id: "Question — answer".
    const text = built.map((b) => `${b.question} — ${b.answer()}`).join('\n');
    const ids = built.map((b) => b.ids());
    const answers = ids.every(Boolean) ? ids : null;
    if (onSubmit?.(text, answers) !== false) {
      disable();
      for (const b of built) b.answered();
      status.textContent = 'Answered.';
    }
  });
  return node;
}
