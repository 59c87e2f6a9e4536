// badges.js — the small coloured labels: attempt outcome, conversation status, danger level.

import { el } from './dom.js';

/**
 * What an assistant message was: 'valid', 'invalid', 'fallback', 'error' (the provider call
 * failed), 'aborted' or 'cancelled' (a streamed attempt stopped early).
 */
export function attemptOutcome(message) {
  if (message.is_fallback) return 'fallback';
  if (message.is_validated) return 'valid';
  if (message.interrupted === 'cancelled') return 'cancelled';
  if (message.interrupted === 'aborted') return 'aborted';
  if (message.error) return 'error';
  return 'invalid';
}

const ATTEMPT_LABELS = {
  valid: ['Valid', 'badge--valid'],
  invalid: ['Invalid', 'badge--invalid'],
  fallback: ['Fallback', 'badge--fallback'],
  error: ['Provider error', 'badge--error'],
  aborted: ['Invalid · aborted', 'badge--invalid'],
  cancelled: ['Cancelled', 'badge--muted'],
};

/** Green "Valid" / yellow "Invalid" (and the rarer outcomes) for an assistant message. */
export function attemptBadge(message) {
  const [label, cls] = ATTEMPT_LABELS[attemptOutcome(message)];
  return el('span', { class: ['badge', cls], 'data-outcome': attemptOutcome(message) }, label);
}

const ROUTE_LABELS = {
  escalated: ['Escalated', 'An earlier model had its invalid replies: the turn moved to this one'],
  failover: ['Failover', 'The previous model\'s provider failed: this model stood in'],
};

/** "Escalated" / "Failover" for an attempt that went to another model than the turn's own. */
export function routeBadge(message) {
  const label = ROUTE_LABELS[message.route];
  if (!label) return null;
  return el('span', { class: ['badge', 'badge--route'], 'data-route': message.route, title: label[1] }, label[0]);
}

export function statusBadge(status) {
  return el('span', { class: ['badge', status === 'blocked' ? 'badge--blocked' : 'badge--active'], 'data-status': status },
    status === 'blocked' ? 'Blocked' : 'Active');
}

export function levelBadge(level) {
  const cls = { emergency: 'badge--blocked', critical: 'badge--error', warning: 'badge--invalid' }[level] || 'badge--muted';
  return el('span', { class: ['badge', cls] }, String(level));
}
