// stats.js — the stats page: GET /admin/v1/stats over a range (from, to, contract, bucket_ms)
// as figures and charts: compliance rate over time, turn outcomes over time, the attempts-per-
// turn histogram, the most violated rules, repairs by kind and the tokens spent on retries.

import { api } from './client.js';
import { fillContracts } from '../shared/contracts.js';
import { el, on, replace } from './dom.js';
import { fromLocalInput, number, percent, time, toLocalInput } from './format.js';
import { barChart, columnChart, lineChart } from './charts.js';
import { navigate } from './router.js';

const BUCKETS = [[60000, 'minute'], [300000, '5 minutes'], [3600000, 'hour'], [86400000, 'day']];

const HOUR = 3600000;
/** Quick ranges: label, span back from now (0: everything), bucket. */
const PRESETS = [['Last hour', HOUR, 60000], ['Last 24 hours', 24 * HOUR, HOUR], ['Last 7 days', 7 * 24 * HOUR, HOUR], ['Last 30 days', 30 * 24 * HOUR, 24 * HOUR], ['All time', 0, HOUR]];

/** The API query from the route's parameters. */
export function statsQuery(params) {
  const q = {};
  for (const name of ['from', 'to']) {
    const v = params.get(name);
    if (v && /^\d+$/.test(v)) q[name] = v;
  }
  if (params.get('contract')) q.contract = params.get('contract');
  const bucket = Number(params.get('bucket_ms'));
  q.bucket_ms = BUCKETS.some(([ms]) => ms === bucket) ? bucket : 3600000;
  return q;
}

/** A time label for a bucket start: the date for day buckets, else the time (with the day when asked). */
function bucketLabel(bucketMs, ms, full) {
  const t = time(ms);
  if (bucketMs >= 86400000) return t.slice(0, 10);
  return full ? t.slice(0, 16) : t.slice(11, 16);
}

function form(q) {
  const input = (id, value) => el('input', { id, name: id, type: 'datetime-local', value: toLocalInput(value) });
  const bucket = el('select', { id: 'bucket_ms', name: 'bucket_ms' },
    BUCKETS.map(([ms, label]) => el('option', { value: String(ms), selected: ms === q.bucket_ms }, label)));
  const f = el('form', { class: 'filters card', 'aria-label': 'Statistics range' },
    el('div', { class: 'field' }, el('label', { for: 'stats-from' }, 'Turns from'), input('stats-from', q.from)),
    el('div', { class: 'field' }, el('label', { for: 'stats-to' }, 'Turns before'), input('stats-to', q.to)),
    el('div', { class: 'field' }, el('label', { for: 'stats-contract' }, 'Contract'),
      el('input', { id: 'stats-contract', name: 'contract', type: 'text', value: q.contract || '', list: 'stats-contracts', autocomplete: 'off' }),
      el('datalist', { id: 'stats-contracts' }, ['selfhelp-response', 'table-chat', 'question-cards', 'topic-analysis'].map((c) => el('option', { value: c })))),
    el('div', { class: 'field' }, el('label', { for: 'bucket_ms' }, 'Bucket'), bucket),
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary' }, 'Show')),
    el('div', { class: 'presets', role: 'group', 'aria-label': 'Quick ranges' }, PRESETS.map(([label, span, bucketMs]) => on(
      el('button', { type: 'button', class: 'preset', 'data-preset': label }, label), 'click', () => {
        const params = { bucket_ms: String(bucketMs) };
        if (span) params.from = String(Date.now() - span);
        if (q.contract) params.contract = q.contract;
        navigate('stats', params);
      }))));
  fillContracts(api.plain(), f.querySelector('#stats-contracts'));
  on(f, 'submit', (event) => {
    event.preventDefault();
    const params = {};
    const from = fromLocalInput(f.elements['stats-from'].value);
    const to = fromLocalInput(f.elements['stats-to'].value);
    if (from !== undefined) params.from = String(from);
    if (to !== undefined) params.to = String(to);
    const contract = f.elements.contract.value.trim();
    if (contract) params.contract = contract;
    params.bucket_ms = bucket.value;
    navigate('stats', params);
  });
  return f;
}

function tile(label, value, note) {
  return el('div', { class: 'tile' }, el('span', { class: 'tile-label' }, label), el('strong', { class: 'tile-value' }, value), note ? el('span', { class: 'muted tile-note' }, note) : null);
}

export function statsCharts(s) {
  const c = s.compliance;
  const bucketMs = c.bucket_ms;
  const series = c.series || [];
  const spansDays = series.length > 1 && time(series[0].start).slice(0, 10) !== time(series[series.length - 1].start).slice(0, 10);
  const xFormat = (ms, full) => bucketLabel(bucketMs, ms, full || spansDays);
  const retryTokens = s.tokens.retries_in + s.tokens.retries_out;
  const allTokens = s.tokens.total_in + s.tokens.total_out;
  return [
    el('div', { class: 'tiles', id: 'stats-tiles' },
      tile('Compliance rate', percent(c.compliance_rate), `${number(c.totals.first_try_valid + c.totals.valid_after_retry)} of ${number(s.turns)} turns valid`),
      tile('Turns', number(s.turns), `${number(c.totals.first_try_valid)} first try · ${number(c.totals.valid_after_retry)} after retry`),
      tile('Attempts', number(s.attempts), `${number(s.invalid_attempts)} invalid · ${number(s.provider_errors)} provider errors`),
      tile('Fallbacks', number(c.totals.fallback), `${number(c.totals.failed)} failed`),
      tile('Tokens on retries', number(retryTokens), allTokens ? `${percent(retryTokens / allTokens)} of ${number(allTokens)}` : 'no tokens reported'),
      tile('Streaming', `${number(s.streaming?.aborted_attempts ?? 0)} aborted`, `${number(s.streaming?.cancelled_attempts ?? 0)} cancelled · ~${number(s.streaming?.tokens_saved ?? 0)} tokens saved`)),
    el('div', { class: 'charts' },
      lineChart(series.map((b) => ({ x: b.start, y: b.turns ? (b.first_try_valid + b.valid_after_retry) / b.turns : null })), {
        title: 'Compliance rate over time',
        description: `Share of turns that ended with a valid reply, per ${BUCKETS.find(([ms]) => ms === bucketMs)?.[1] || `${bucketMs} ms`} bucket; buckets without turns are gaps.`,
        yMax: 1, yFormat: (v) => `${Math.round(v * 100)} %`, xFormat, xLabel: 'Bucket start', yLabel: 'Valid turns',
      }),
      columnChart(series.map((b) => ({ label: xFormat(b.start), values: [b.first_try_valid, b.valid_after_retry, b.fallback, b.failed] })),
        [{ name: 'first try valid', class: 's-valid' }, { name: 'valid after retry', class: 's-retry' }, { name: 'fallback', class: 's-fallback' }, { name: 'failed', class: 's-failed' }],
        { title: 'Turn outcomes over time', description: 'Turns per bucket, stacked by outcome.', xLabel: 'Bucket start', yLabel: 'Turns' }),
      columnChart(s.attempts_per_turn.map((a) => ({ label: String(a.attempts), values: [a.turns] })), [{ name: 'turns', class: 's-primary' }],
        { title: 'Attempts per turn', description: 'Histogram: how many turns needed how many attempts.', xLabel: 'Attempts in the turn', yLabel: 'Turns' }),
      barChart(s.top_violated_rules.map((r) => ({ label: r.rule, value: r.count })),
        { title: 'Most violated rules', description: 'Attempts that broke each rule (an attempt counts once per rule), most first.', valueLabel: 'Attempts', class: 's-retry' }),
      barChart(s.repairs_by_kind.map((r) => ({ label: r.kind, value: r.count })),
        { title: 'Repairs by kind', description: 'Repairs applied to replies, by kind, most first.', valueLabel: 'Repairs', class: 's-primary' }),
      columnChart([
        { label: 'prompt (in)', values: [s.tokens.total_in - s.tokens.retries_in, s.tokens.retries_in] },
        { label: 'completion (out)', values: [s.tokens.total_out - s.tokens.retries_out, s.tokens.retries_out] },
      ], [{ name: 'final valid attempts', class: 's-valid' }, { name: 'retries', class: 's-failed' }],
      { title: 'Tokens spent on retries', description: `Prompt and completion tokens: ${number(s.tokens.retries_in)} in and ${number(s.tokens.retries_out)} out were spent on attempts that were not the final valid one.`, xLabel: 'Tokens', yLabel: 'Tokens' })),
  ];
}

/** Attempts per configured model, and how many reached it by escalation or failover. */
function modelsTable(models) {
  if (!models?.length) return null;
  return el('section', { class: 'card models', 'aria-labelledby': 'models-title' },
    el('h2', { id: 'models-title' }, 'Attempts per model'),
    el('div', { class: 'table-wrap' }, el('table', { class: 'responsive', id: 'stats-models' },
      el('thead', {}, el('tr', {}, ['Model', 'Attempts', 'Valid', 'Escalated to it', 'Failed over to it'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, models.map((m) => el('tr', { 'data-model': m.model },
        el('td', { 'data-label': 'Model' }, el('span', { class: 'mono' }, m.model || '—')),
        el('td', { 'data-label': 'Attempts' }, number(m.attempts)),
        el('td', { 'data-label': 'Valid' }, number(m.valid)),
        el('td', { 'data-label': 'Escalated to it' }, number(m.escalations)),
        el('td', { 'data-label': 'Failed over to it' }, number(m.failovers))))))));
}

export async function renderStats(view, params, current) {
  const q = statsQuery(params);
  const stats = await api.stats(q);
  if (!current()) return;
  document.title = 'Stats · Bridle admin';
  replace(view, el('h1', {}, 'Stats'), form(q), statsCharts(stats), modelsTable(stats.models));
}
