// charts.js — small SVG charts drawn by hand: a line chart, stacked columns (a histogram is one
// series) and horizontal bars. Each is a <figure> with a caption, an SVG with role="img", a
// <title> and a <desc>, axis labels, and the numbers as a table under "Data".

import { el, svg } from './dom.js';

const W = 640;
const H = 260;
const M = { top: 16, right: 16, bottom: 44, left: 64 };
let serial = 0;

/** Round-ish tick values from 0 to at least max. */
export function ticks(max, count = 4) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * magnitude).find((s) => s >= raw);
  const out = [];
  for (let v = 0; v <= max + step * 0.999; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** 1200 → "1.2k", 3000000 → "3M". */
export function compact(v) {
  if (Math.abs(v) >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (Math.abs(v) >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(v);
}

function frame(title, description, className) {
  const id = `chart-${++serial}`;
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': `${id}-t ${id}-d`, class: 'chart-svg', preserveAspectRatio: 'xMidYMid meet',
  }, svg('title', { id: `${id}-t` }, title), svg('desc', { id: `${id}-d` }, description));
  const figure = el('figure', { class: ['chart', className] }, el('figcaption', {}, title), root);
  return { figure, root };
}

function dataTable(head, rows) {
  return el('details', { class: 'chart-data' }, el('summary', {}, 'Data'),
    el('div', { class: 'table-wrap' }, el('table', {},
      el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => el('td', {}, c))))))));
}

function yAxis(root, max, format, label) {
  const plotH = H - M.top - M.bottom;
  const values = ticks(max);
  const top = values[values.length - 1];
  for (const v of values) {
    const y = M.top + plotH - (v / top) * plotH;
    root.append(svg('line', { x1: M.left, x2: W - M.right, y1: y, y2: y, class: 'grid' }));
    root.append(svg('text', { x: M.left - 6, y: y + 4, class: 'tick', 'text-anchor': 'end' }, format(v)));
  }
  root.append(svg('text', { x: 12, y: M.top + plotH / 2, class: 'axis-label', 'text-anchor': 'middle', transform: `rotate(-90 12 ${M.top + plotH / 2})` }, label));
  return (v) => M.top + plotH - (v / top) * plotH;
}

function xLabel(root, label) {
  root.append(svg('text', { x: M.left + (W - M.left - M.right) / 2, y: H - 6, class: 'axis-label', 'text-anchor': 'middle' }, label));
}

function empty(figure, root, text) {
  root.append(svg('text', { x: W / 2, y: H / 2, class: 'empty-text', 'text-anchor': 'middle' }, text));
  figure.classList.add('chart--empty');
  return figure;
}

/**
 * A line over time. points: [{x, y}] with y null for a gap (a bucket without turns).
 * options: {title, description, yMax, yFormat, xFormat, xLabel, yLabel}.
 */
export function lineChart(points, o) {
  const { figure, root } = frame(o.title, o.description, 'chart--line');
  const known = points.filter((p) => p.y !== null && p.y !== undefined);
  if (!known.length) return empty(figure, root, 'No data in this range');
  const yOf = yAxis(root, o.yMax ?? Math.max(...known.map((p) => p.y)), o.yFormat, o.yLabel);
  const pad = 24; // keeps the end points and their labels clear of the y axis
  const plotW = W - M.left - M.right - 2 * pad;
  const x0 = points[0].x;
  const x1 = points[points.length - 1].x;
  const xOf = (x) => M.left + pad + (x1 === x0 ? plotW / 2 : ((x - x0) / (x1 - x0)) * plotW);
  const tickCount = Math.min(points.length, 6);
  for (let i = 0; i < tickCount; i++) {
    const p = points[Math.round((i * (points.length - 1)) / Math.max(1, tickCount - 1))];
    root.append(svg('text', { x: xOf(p.x), y: H - M.bottom + 16, class: 'tick', 'text-anchor': 'middle' }, o.xFormat(p.x)));
  }
  xLabel(root, o.xLabel);
  let d = '';
  let pen = false;
  for (const p of points) {
    if (p.y === null || p.y === undefined) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${xOf(p.x).toFixed(1)},${yOf(p.y).toFixed(1)} `;
    pen = true;
  }
  root.append(svg('path', { d: d.trim(), class: 'line' }));
  for (const p of known) {
    root.append(svg('circle', { cx: xOf(p.x), cy: yOf(p.y), r: 3.5, class: 'dot' },
      svg('title', {}, `${o.xFormat(p.x, true)}: ${o.yFormat(p.y)}`)));
  }
  figure.append(dataTable([o.xLabel, o.yLabel], known.map((p) => [o.xFormat(p.x, true), o.yFormat(p.y)])));
  return figure;
}

/**
 * Stacked columns. columns: [{label, values: [n per series]}]; series: [{name, class}].
 * A histogram is one series. options: {title, description, xLabel, yLabel}.
 */
export function columnChart(columns, series, o) {
  const { figure, root } = frame(o.title, o.description, 'chart--columns');
  const totals = columns.map((c) => c.values.reduce((a, b) => a + b, 0));
  if (!columns.length || Math.max(...totals) === 0) return empty(figure, root, 'No data in this range');
  const yOf = yAxis(root, Math.max(...totals), compact, o.yLabel);
  const plotW = W - M.left - M.right;
  const slot = plotW / columns.length;
  const bar = Math.max(1, Math.min(56, slot * 0.7));
  const every = Math.ceil(columns.length / 12);
  columns.forEach((c, i) => {
    const x = M.left + i * slot + (slot - bar) / 2;
    let base = 0;
    c.values.forEach((v, s) => {
      if (!v) return;
      const y = yOf(base + v);
      root.append(svg('rect', { x, y, width: bar, height: yOf(base) - y, class: ['bar', series[s].class], 'data-value': v },
        svg('title', {}, `${c.label}: ${v} ${series[s].name}`)));
      base += v;
    });
    if (i % every === 0) root.append(svg('text', { x: x + bar / 2, y: H - M.bottom + 16, class: 'tick', 'text-anchor': 'middle' }, c.label));
  });
  xLabel(root, o.xLabel);
  if (series.length > 1) {
    figure.append(el('ul', { class: 'legend' }, series.map((s) => el('li', {}, el('span', { class: ['swatch', s.class], 'aria-hidden': 'true' }), s.name))));
  }
  figure.append(dataTable([o.xLabel, ...series.map((s) => s.name)], columns.map((c) => [c.label, ...c.values.map(String)])));
  return figure;
}

/** Horizontal bars, largest first as given. rows: [{label, value}]. options: {title, description, valueLabel, class}. */
export function barChart(rows, o) {
  const rowH = 26;
  const height = Math.max(60, rows.length * rowH + 40);
  const id = `chart-${++serial}`;
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${height}`, role: 'img', 'aria-labelledby': `${id}-t ${id}-d`, class: 'chart-svg',
  }, svg('title', { id: `${id}-t` }, o.title), svg('desc', { id: `${id}-d` }, o.description));
  const figure = el('figure', { class: 'chart chart--bars' }, el('figcaption', {}, o.title), root);
  if (!rows.length || Math.max(...rows.map((r) => r.value)) === 0) {
    root.append(svg('text', { x: W / 2, y: height / 2, class: 'empty-text', 'text-anchor': 'middle' }, 'None in this range'));
    figure.classList.add('chart--empty');
    return figure;
  }
  const labelW = 190;
  const max = Math.max(...rows.map((r) => r.value));
  const plotW = W - labelW - 70;
  rows.forEach((r, i) => {
    const y = 10 + i * rowH;
    const w = Math.max(2, (r.value / max) * plotW);
    const text = String(r.label);
    const label = text.length > 28 ? `${text.slice(0, 27)}…` : text;
    root.append(svg('text', { x: labelW - 8, y: y + 16, class: 'tick bar-label', 'text-anchor': 'end' }, label));
    root.append(svg('rect', { x: labelW, y: y + 3, width: w, height: rowH - 8, class: ['bar', r.class || o.class], 'data-value': r.value },
      svg('title', {}, `${r.label}: ${r.value}`)));
    root.append(svg('text', { x: labelW + w + 6, y: y + 16, class: 'tick' }, String(r.value)));
  });
  root.append(svg('text', { x: labelW + plotW / 2, y: height - 6, class: 'axis-label', 'text-anchor': 'middle' }, o.valueLabel));
  figure.append(dataTable(['', o.valueLabel], rows.map((r) => [r.label, String(r.value)])));
  return figure;
}
