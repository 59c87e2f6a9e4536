// format.js — how the admin console writes times, numbers and JSON.

/** A Unix ms time as "2026-11-24 13:05:09" in the browser's time zone ("—" when absent). */
export function time(ms) {
  if (ms === null || ms === undefined) return '—';
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** The value of an <input type="datetime-local"> for a Unix ms time. */
export function toLocalInput(ms) {
  if (ms === null || ms === undefined || ms === '') return '';
  return time(Number(ms)).replace(' ', 'T').slice(0, 16);
}

/** Unix ms from an <input type="datetime-local"> value ('' → undefined). */
export function fromLocalInput(value) {
  if (!value) return undefined;
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

export function number(n) {
  return n === null || n === undefined ? '—' : Number(n).toLocaleString('en-US');
}

export function percent(rate) {
  return `${(Number(rate || 0) * 100).toFixed(1)} %`;
}

/** Pretty JSON (two spaces); strings that hold JSON are left as they are. */
export function json(value) {
  return JSON.stringify(value, null, 2);
}

/** The first characters of an id (UUIDv7 ids share their leading time part; keep the tail). */
export function shortId(id) {
  const s = String(id);
  return s.length > 13 ? `…${s.slice(-12)}` : s;
}
