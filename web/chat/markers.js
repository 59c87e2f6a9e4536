// Marker payloads (shared spec 03): a SCHEMA_PROPOSAL or DATA_PROPOSAL shown as a reviewable
// table with Apply / Dismiss. Data proposals have a checkbox per row (all ticked at first).
// Applying dispatches a `bridle:apply-proposal` event on window with {type, data} — the rows
// left ticked — for the application hosting the chat; the chat itself changes no table.
//
// An update shows each changed column's old value (struck through) next to the new one, and a
// delete the row's values, when the turn's application state has the table's rows (spec 03:
// "hover tooltip shows old value"; here it is also in the cell, for touch screens and readers).
//
// Exports:
//   renderProposal(payload, {interactive, appState})  the proposal element ({type, data});
//       appState: the turn's application state (its `table.rows`, each with `row_id`), for
//       old values; unknown payload types are shown as JSON

import { el } from '../shared/dom.js';
import { tableRows } from './turn-context.js';

const show = (v) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
const pairs = (obj) => (obj && typeof obj === 'object' ? Object.entries(obj).map(([k, v]) => `${k}: ${show(v)}`).join('; ') : show(obj));

function table(headers, rows) {
  return el(
    'div',
    { class: 'table-wrap' },
    el('table', {}, el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col', text: h })))), el('tbody', {}, rows)),
  );
}

function columnDetails(column) {
  if (!column || typeof column !== 'object') return '';
  const parts = [];
  if (column.required) parts.push('required');
  if (Array.isArray(column.options)) parts.push(`options: ${column.options.join(', ')}`);
  if (column.filterDisplay) parts.push(`filter: ${column.filterDisplay}`);
  return parts.join('; ');
}

function schemaBody(data) {
  const ops = Array.isArray(data?.operations) ? data.operations : [];
  const rows = ops.map((op) => {
    const column = op.column ?? op.changes ?? {};
    const where = op.column_id ? `${op.column_id}` : '';
    const after = op.after_column_id ? `after ${op.after_column_id}` : '';
    return el(
      'tr',
      { class: `op-${op.action}` },
      el('td', { text: op.action ?? '' }),
      el('td', { text: [column.name, where && column.name ? `(${where})` : where].filter(Boolean).join(' ') }),
      el('td', { text: column.type ?? '' }),
      el('td', { text: [columnDetails(column), after].filter(Boolean).join('; ') }),
    );
  });
  const parts = [table(['Change', 'Column', 'Type', 'Details'], rows)];
  const samples = Array.isArray(data?.sample_rows) ? data.sample_rows.filter((r) => r && typeof r === 'object') : [];
  if (samples.length) {
    const keys = [...new Set(samples.flatMap((r) => Object.keys(r)))];
    parts.push(el('p', { class: 'reasoning muted', text: 'Sample rows' }));
    parts.push(table(keys, samples.map((r) => el('tr', {}, keys.map((k) => el('td', { text: show(r[k]) }))))));
  }
  return { parts, selected: () => data };
}

// The row an operation names, from the table the turn ran with (`row_id`, or `id`).
// A row's values without its id, for a delete's cell.
function rowValues(row) {
  if (!row) return '';
  return Object.fromEntries(Object.entries(row).filter(([k]) => k !== 'row_id' && k !== 'id'));
}

function currentRow(rows, op) {
  if (op.row_id === undefined || op.row_id === null) return null;
  return rows.find((r) => String(r.row_id ?? r.id) === String(op.row_id)) ?? null;
}

// An update's changes: "Column: old → new" when the old value is known, else "Column: new".
function changeCells(changes, before) {
  if (!changes || typeof changes !== 'object') return show(changes);
  return Object.entries(changes).map(([column, value]) => {
    const known = before && Object.hasOwn(before, column);
    return el(
      'span',
      { class: 'change', title: known ? `was: ${show(before[column])}` : null, dataset: { column } },
      `${column}: `,
      known ? [el('del', { text: show(before[column]) }), ' → '] : null,
      el('ins', { text: show(value) }),
    );
  });
}

function dataBody(data, interactive, appState) {
  const ops = Array.isArray(data?.operations) ? data.operations : [];
  const rowsNow = tableRows(appState);
  const boxes = [];
  const rows = ops.map((op, i) => {
    const box = el('input', { type: 'checkbox', checked: true, disabled: !interactive, 'aria-label': `Include change ${i + 1} (${op.action})` });
    boxes.push(box);
    return el(
      'tr',
      { class: `op-${op.action}` },
      el('td', {}, box),
      el('td', { text: op.action ?? '' }),
      el('td', { text: op.row_id === undefined ? 'new' : `#${op.row_id}` }),
      op.action === 'update'
        ? el('td', {}, changeCells(op.changes, currentRow(rowsNow, op)))
        : el('td', { text: pairs(op.data ?? op.changes ?? (op.action === 'delete' ? rowValues(currentRow(rowsNow, op)) : '')) }),
    );
  });
  return {
    parts: [table(['Apply', 'Change', 'Row', 'Values'], rows)],
    selected: () => ({ ...data, operations: ops.filter((_, i) => boxes[i].checked) }),
    boxes,
  };
}

export function renderProposal(payload, { interactive = true, appState = null } = {}) {
  const type = payload?.type ?? 'payload';
  const data = payload?.data ?? {};
  let title;
  let body;
  if (type === 'schema_proposal') {
    title = data.mode === 'update' ? `Schema change${data.table_name ? `: ${data.table_name}` : ''}` : `New table: ${data.table_name ?? ''}`;
    body = schemaBody(data);
  } else if (type === 'data_proposal') {
    const n = Array.isArray(data.operations) ? data.operations.length : 0;
    title = `Data changes (${n} row${n === 1 ? '' : 's'})`;
    body = dataBody(data, interactive, appState);
  } else {
    title = `Proposal: ${type}`;
    body = { parts: [el('pre', {}, el('code', { text: JSON.stringify(data, null, 2) }))], selected: () => data };
  }
  const status = el('span', { class: 'status', role: 'status' });
  const apply = el('button', { type: 'button', class: 'primary', text: 'Apply', disabled: !interactive });
  const dismiss = el('button', { type: 'button', text: 'Dismiss', disabled: !interactive });
  const node = el(
    'section',
    { class: ['proposal', `proposal-${type}`], 'aria-label': title, dataset: { type } },
    el('header', {}, el('h3', { text: title }), apply, dismiss, status),
    data.table_description ? el('p', { class: 'reasoning', text: data.table_description }) : null,
    data.reasoning ? el('p', { class: 'reasoning muted', text: data.reasoning }) : null,
    body.parts,
  );
  const finish = (state, message) => {
    apply.disabled = true;
    dismiss.disabled = true;
    for (const b of body.boxes ?? []) b.disabled = true;
    node.classList.add(state);
    node.dataset.state = state;
    status.textContent = message;
  };
  apply.addEventListener('click', () => {
    const chosen = body.selected();
    const count = Array.isArray(chosen?.operations) ? chosen.operations.length : 0;
    window.dispatchEvent(new CustomEvent('bridle:apply-proposal', { detail: { type, data: chosen } }));
    finish('applied', `Applied (${count} change${count === 1 ? '' : 's'}).`);
  });
  dismiss.addEventListener('click', () => finish('dismissed', 'Dismissed.'));
  return node;
}
