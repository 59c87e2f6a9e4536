// Safety in the chat: the banner for a turn's safety decision (the `safety` event / the reply's
// assessment) and the blocked state of a conversation.
//
// Exports:
//   safetyBanner(decision, assessment?)  a banner for a decision {level, blocked,
//       crisis_resources}: emergency/blocked → role=alert with the crisis resources; critical and
//       warning → a calmer note with the reply's safety_message; null when there is nothing
//   blockedBanner(text)                  the conversation-level banner of a blocked
//       conversation, with the crisis text the server gave (423 body or crisis_resources)

import { el } from '../shared/dom.js';

export function safetyBanner(decision, assessment) {
  const level = decision?.level ?? assessment?.danger_level ?? null;
  const blocked = decision?.blocked === true;
  const message = typeof assessment?.safety_message === 'string' ? assessment.safety_message : null;
  if (!level && !blocked) return null;
  const crisis = typeof decision?.crisis_resources === 'string' ? decision.crisis_resources : null;
  const heading = blocked || level === 'emergency'
    ? 'Your safety matters. Please reach out for help now.'
    : level === 'critical'
      ? 'This sounds serious. You do not have to handle it alone.'
      : 'Take care — this may be a difficult topic.';
  return el(
    'div',
    {
      class: ['safety-banner', `level-${level ?? 'none'}`, blocked ? 'blocked' : null],
      role: blocked || level === 'emergency' || level === 'critical' ? 'alert' : 'note',
    },
    el('strong', { text: heading }),
    message ? el('p', { text: message }) : null,
    crisis ? el('p', { class: 'crisis' }, el('span', { class: 'visually-hidden', text: 'Crisis resources: ' }), crisis) : null,
  );
}

export function blockedBanner(text) {
  return el(
    'div',
    { class: ['safety-banner', 'blocked'] },
    el('strong', { text: 'This conversation is paused for your safety.' }),
    text ? el('p', { class: 'crisis', text }) : null,
    el('p', { class: 'muted', text: 'New messages are not sent to the assistant until a staff member reviews it. Please use the resources above.' }),
  );
}
