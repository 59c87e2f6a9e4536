// A reply's form (shared spec 01): the seven field types, client-side validation and a submit
// that sends the answers as the next message.
//
// Exports:
//   renderForm(form, {onSubmit, interactive})  a <form>: radio, checkbox, select, text,
//       textarea, number, scale (a row of radio buttons for up to 11 whole steps, a slider
//       otherwise). On submit each field is checked — required; number and scale within
//       min/max; text and textarea at least min / at most max characters; checkbox at least
//       min / at most max choices — errors are shown beside their field (aria-invalid, the
//       first invalid field focused), and when all pass onSubmit(text) gets the answers as
//       one message ("Label: answer" lines) and the form is disabled.
//   answersText(form, answers)  that message text, for a {fieldId: answer} map

import { el } from '../shared/dom.js';

let seq = 0;
const uid = (prefix) => `${prefix}-${(seq += 1)}`;

const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const optionsOf = (field) => (Array.isArray(field.options) ? field.options : []).filter((o) => o && typeof o === 'object');

function scaleSteps(field) {
  const min = num(field.min);
  const max = num(field.max);
  if (min === null || max === null || max <= min) return null;
  if (!Number.isInteger(min) || !Number.isInteger(max) || max - min > 10) return null;
  const steps = [];
  for (let v = min; v <= max; v += 1) steps.push(v);
  return steps;
}

function choiceList(field, name, type) {
  return el(
    'div',
    { class: 'choices' },
    optionsOf(field).map((o) =>
      el('label', {}, el('input', { type, name, value: String(o.value ?? '') }), el('span', { text: o.label ?? o.value ?? '' })),
    ),
  );
}

// Builds one field: its element, how to read its answer, and how to validate it.
function buildField(field) {
  const id = uid(`f-${String(field.id ?? 'field').replace(/[^\w-]/g, '_')}`);
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [field.helpText ? hintId : null, errorId].filter(Boolean).join(' ');
  const label = String(field.label ?? field.id ?? '');
  const required = field.required === true;
  const mark = required ? el('span', { class: 'required', 'aria-hidden': 'true', text: ' *' }) : null;
  const hint = field.helpText ? el('span', { class: 'hint', id: hintId, text: field.helpText }) : null;
  const error = el('p', { class: 'field-error', id: errorId, 'aria-live': 'polite' });
  const type = field.type;
  let control;
  let read;
  let group = false;
  const inputAttrs = { id, name: id, 'aria-describedby': describedBy, required, placeholder: field.placeholder || null };

  if (type === 'radio' || type === 'checkbox') {
    group = true;
    control = choiceList(field, id, type);
    read = () => [...control.querySelectorAll('input:checked')].map((i) => i.value);
  } else if (type === 'select') {
    control = el(
      'select',
      inputAttrs,
      el('option', { value: '', text: field.placeholder || 'Choose…' }),
      optionsOf(field).map((o) => el('option', { value: String(o.value ?? ''), text: o.label ?? o.value ?? '' })),
    );
    read = () => control.value;
  } else if (type === 'textarea') {
    control = el('textarea', { ...inputAttrs, rows: '3' });
    read = () => control.value.trim();
  } else if (type === 'number') {
    control = el('input', { ...inputAttrs, type: 'number', inputmode: 'decimal', step: 'any', min: num(field.min) ?? null, max: num(field.max) ?? null });
    read = () => control.value.trim();
  } else if (type === 'scale') {
    const steps = scaleSteps(field);
    if (steps) {
      group = true;
      control = el(
        'div',
        { class: 'scale' },
        steps.map((v) => el('label', {}, el('input', { type: 'radio', name: id, value: String(v) }), el('span', { text: String(v) }))),
      );
      read = () => control.querySelector('input:checked')?.value ?? '';
    } else {
      const min = num(field.min) ?? 0;
      const max = num(field.max) ?? 100;
      const output = el('output', { for: id, text: String(min) });
      const range = el('input', { ...inputAttrs, type: 'range', min: String(min), max: String(max), step: 'any', value: String(min) });
      range.addEventListener('input', () => {
        output.textContent = range.value;
      });
      control = el('div', { class: 'range' }, range, output);
      read = () => range.value;
    }
  } else {
    control = el('input', { ...inputAttrs, type: 'text' });
    read = () => control.value.trim();
  }

  const wrapper = group
    ? el('fieldset', { class: ['field', `field-${type}`], 'aria-describedby': describedBy, dataset: { fieldId: field.id ?? '' } },
        el('legend', {}, label, mark), hint, control, error)
    : el('div', { class: ['field', `field-${type}`], dataset: { fieldId: field.id ?? '' } },
        el('label', { for: id }, label, mark), hint, control, error);

  function validate() {
    const value = read();
    const min = num(field.min);
    const max = num(field.max);
    const empty = Array.isArray(value) ? value.length === 0 : value === '';
    if (empty) return required ? 'This field is required.' : null;
    if (type === 'number' || type === 'scale') {
      const n = Number(value);
      if (!Number.isFinite(n)) return 'Enter a number.';
      if (min !== null && n < min) return `Enter at least ${min}.`;
      if (max !== null && n > max) return `Enter at most ${max}.`;
    } else if (type === 'text' || type === 'textarea') {
      const length = [...value].length;
      if (min !== null && length < min) return `Write at least ${min} characters.`;
      if (max !== null && length > max) return `Write at most ${max} characters.`;
    } else if (type === 'checkbox') {
      if (min !== null && value.length < min) return `Choose at least ${min}.`;
      if (max !== null && value.length > max) return `Choose at most ${max}.`;
    }
    return null;
  }

  function show(message) {
    error.textContent = message || '';
    const targets = group ? [...control.querySelectorAll('input')] : [control.querySelector('input') || control];
    for (const t of targets) {
      if (message) t.setAttribute('aria-invalid', 'true');
      else t.removeAttribute('aria-invalid');
    }
  }

  function answer() {
    const value = read();
    const opts = optionsOf(field);
    const labelOf = (v) => opts.find((o) => String(o.value) === v)?.label ?? v;
    if (Array.isArray(value)) return value.map(labelOf).join(', ');
    if (type === 'select') return labelOf(value);
    if (type === 'scale' && num(field.max) !== null && value !== '') return `${value} (${num(field.min) ?? ''}–${num(field.max)})`;
    return value;
  }

  return {
    field,
    node: wrapper,
    validate,
    show,
    answer,
    focus: () => (group ? control.querySelector('input') : control.querySelector?.('input') || control).focus(),
  };
}

export function answersText(form, answers) {
  const lines = [];
  if (form?.title) lines.push(`${form.title}:`);
  for (const field of Array.isArray(form?.fields) ? form.fields : []) {
    const a = answers[field.id];
    lines.push(`- ${field.label ?? field.id}: ${a === undefined || a === '' ? '(no answer)' : a}`);
  }
  return lines.join('\n');
}

export function renderForm(form, { onSubmit, interactive = true } = {}) {
  const fields = (Array.isArray(form?.fields) ? form.fields : []).filter((f) => f && typeof f === 'object').map(buildField);
  const status = el('p', { class: 'form-status', role: 'status' });
  const submit = el('button', { type: 'submit', text: form?.submit_label || 'Submit' });
  const node = el(
    'form',
    { class: 'reply-form', novalidate: true, 'aria-label': form?.title || 'Form' },
    form?.title ? el('h3', { text: form.title }) : null,
    form?.description ? el('p', { class: 'muted', text: form.description }) : null,
    fields.map((f) => f.node),
    el('div', {}, submit),
    status,
  );
  const disable = () => {
    for (const c of node.querySelectorAll('input, select, textarea, button')) c.disabled = true;
  };
  if (!interactive) disable();
  node.addEventListener('submit', (event) => {
    event.preventDefault();
    let firstBad = null;
    for (const f of fields) {
      const problem = f.validate();
      f.show(problem);
      if (problem && !firstBad) firstBad = f;
    }
    if (firstBad) {
      status.textContent = '';
      firstBad.focus();
      return;
    }
    const answers = {};
    for (const f of fields) answers[f.field.id] = f.answer();
    const sent = onSubmit?.(answersText(form, answers));
    if (sent !== false) {
      disable();
      status.textContent = 'Answers sent.';
    }
  });
  return node;
}
