// The chat page: sign in with a user key (kept in sessionStorage), list and start
// conversations, load one's history, send messages and render the streamed replies.
//
// Exports nothing; it runs on load. Parts: shared/api.js (HTTP), stream.js (one streamed turn),
// render.js (a reply's value), safety.js (banners, blocked state), turn-context.js (the page,
// mode and application state the next message runs under).

import { ApiError, client, keyStore } from '../shared/api.js';
import { fillContracts } from '../shared/contracts.js';
import { clear, el, formatTime } from '../shared/dom.js';
import { blockedBanner } from './safety.js';
import { assistantBubble, streamTurn } from './stream.js';
import { renderValue } from './render.js';
import { contextPanel } from './turn-context.js';

const $ = (id) => document.getElementById(id);
const store = keyStore('bridle.chat.key');
// `loading`: the open conversation's history is on its way; the composer waits for it, so a
// message sent meanwhile is never shown twice (once as sent, once in the history).
const state = { api: null, conversations: [], current: null, busy: false, blocked: false, loading: false, loads: 0 };

const ui = {
  signinForm: $('signin'),
  signinKey: $('signin-key'),
  signinError: $('signin-error'),
  app: $('app'),
  signout: $('signout'),
  toggle: $('toggle-sidebar'),
  sidebar: $('sidebar'),
  newForm: $('new-conversation'),
  newError: $('nc-error'),
  list: $('conversations'),
  listEmpty: $('conversations-empty'),
  title: $('chat-title'),
  context: $('chat-context'),
  blocked: $('blocked-banner'),
  messages: $('messages'),
  composer: $('composer'),
  input: $('composer-input'),
};

// The context the next message runs under, shown under the title as it changes.
const panel = contextPanel(() => {
  if (state.current) ui.context.textContent = panel.describe();
});

function describe(conversation) {
  // The list view carries a short summary of each context, not the context itself.
  if (typeof conversation.summary === 'string') return conversation.summary;
  const ctx = conversation.context && typeof conversation.context === 'object' ? conversation.context : {};
  return Object.entries(ctx)
    .filter(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
    .map(([k, v]) => `${k}: ${v}`)
    .join(' · ');
}

function setComposer() {
  const enabled = Boolean(state.current) && !state.busy && !state.blocked && !state.loading;
  ui.input.disabled = !enabled;
  ui.composer.querySelector('button').disabled = !enabled;
}

function setBlocked(text) {
  state.blocked = true;
  clear(ui.blocked).appendChild(blockedBanner(text));
  ui.blocked.hidden = false;
  document.body.dataset.blocked = 'true';
  if (state.current) state.current.status = 'blocked';
  renderList();
  setComposer();
}

function clearBlocked() {
  state.blocked = false;
  clear(ui.blocked);
  ui.blocked.hidden = true;
  delete document.body.dataset.blocked;
}

function showSidebar(open) {
  ui.sidebar.classList.toggle('open', open);
  ui.toggle.setAttribute('aria-expanded', String(open));
}

function renderList() {
  clear(ui.list);
  renderMore();
  ui.listEmpty.hidden = state.conversations.length > 0;
  for (const c of state.conversations) {
    const current = state.current?.id === c.id;
    ui.list.appendChild(
      el(
        'li',
        {},
        el(
          'button',
          { type: 'button', 'aria-current': current ? 'true' : null, dataset: { id: c.id }, onclick: () => openConversation(c) },
          el('span', {}, c.contract, c.status === 'blocked' ? [' ', el('span', { class: 'badge danger', text: 'blocked' })] : null),
          el('span', { class: 'sub', text: [describe(c), formatTime(c.created_at)].filter(Boolean).join(' · ') }),
        ),
      ),
    );
  }
}

function scrollToEnd() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function userBubble(content) {
  return el('li', { class: 'msg user', text: content });
}

// Conversations come a page at a time, newest first; "Show older" fetches the next page.
const PAGE = 50;

async function loadConversations() {
  const page = await state.api.get('/v1/conversations', { limit: PAGE });
  state.conversations = (page.items ?? []).slice().sort((a, b) => (b.created_at ?? 0) - (a.created_at ?? 0));
  state.total = page.total ?? state.conversations.length;
  renderList();
}

async function loadOlder() {
  const page = await state.api.get('/v1/conversations', { limit: PAGE, offset: state.conversations.length });
  const known = new Set(state.conversations.map((c) => c.id));
  state.conversations.push(...(page.items ?? []).filter((c) => !known.has(c.id)));
  state.total = page.total ?? state.total;
  renderList();
}

// The "Show older" button under the list, while older conversations remain.
function renderMore() {
  if (!ui.more) {
    ui.more = el('button', { type: 'button', class: 'more', text: 'Show older conversations' });
    ui.more.addEventListener('click', async () => {
      ui.more.disabled = true;
      try {
        await loadOlder();
      } finally {
        ui.more.disabled = false;
      }
    });
    ui.list.after(ui.more);
  }
  const left = (state.total ?? 0) - state.conversations.length;
  ui.more.hidden = left <= 0;
  ui.more.textContent = `Show older conversations (${left})`;
}

async function openConversation(conversation) {
  state.current = conversation;
  clearBlocked();
  showSidebar(false);
  ui.title.textContent = conversation.contract;
  ui.context.textContent = describe(conversation);
  clear(ui.messages);
  renderList();
  const load = ++state.loads;
  state.loading = true;
  setComposer();
  let history;
  let full;
  let failure = null;
  const path = `/v1/conversations/${encodeURIComponent(conversation.id)}`;
  try {
    // The list carries a summary of each context; the conversation itself has it whole.
    [full, history] = await Promise.all([state.api.get(path), state.api.get(`${path}/messages`)]);
  } catch (error) {
    failure = error;
  } finally {
    // Only the newest load frees the composer (another conversation may have been opened).
    if (load === state.loads) {
      state.loading = false;
      setComposer();
    }
  }
  if (state.current?.id !== conversation.id) return;
  if (failure) {
    ui.messages.appendChild(el('li', { class: 'msg assistant' }, el('div', { class: 'callout error', role: 'alert', text: failure.message })));
    return;
  }
  const messages = history.messages ?? [];
  const users = messages.filter((m) => m.role === 'user');
  panel.load(full?.context, users.at(-1)?.context);
  ui.context.textContent = panel.describe();
  messages.forEach((m, i) => {
    if (m.role === 'user') {
      ui.messages.appendChild(userBubble(m.content ?? ''));
    } else {
      // A reply is drawn with the state its turn ran under, and with the answer the next
      // message gave its cards.
      const asked = messages[i - 1]?.role === 'user' ? messages[i - 1] : null;
      const next = messages[i + 1]?.role === 'user' ? messages[i + 1] : null;
      const last = i === messages.length - 1;
      const node = el('li', { class: 'msg assistant', dataset: { state: 'complete' } },
        renderValue(m.value, {
          send,
          interactive: last && conversation.status !== 'blocked',
          appState: asked?.context?.app_state ?? null,
          answered: next?.answer ?? null,
        }));
      ui.messages.appendChild(node);
    }
  });
  if (conversation.status === 'blocked') setBlocked(null);
  scrollToEnd();
  ui.input.focus();
}

// Sends `content` as the next message of the open conversation — or, with `answer` (card
// answers by id), that answer, `content` being its readable text; false when it cannot be sent
// now (so forms and cards stay answerable).
function send(content, answer = null) {
  const text = String(content ?? '').trim();
  if (!text || !state.current || state.busy || state.blocked || state.loading) return false;
  // The turn runs under the panel's page, mode and application state.
  const turn = panel.read();
  if (turn.error) return false;
  runTurn(state.current, text, { answer, context: turn.context, appState: panel.appState() });
  return true;
}

async function runTurn(conversation, content, { answer, context, appState }) {
  state.busy = true;
  setComposer();
  ui.messages.appendChild(userBubble(content));
  const bubble = assistantBubble();
  ui.messages.appendChild(bubble.node);
  scrollToEnd();
  const observer = new MutationObserver(scrollToEnd);
  observer.observe(bubble.node, { childList: true, subtree: true });
  try {
    const { decision } = await streamTurn(state.api, conversation.id, content, bubble, { send, answer, context, appState });
    if (decision?.blocked) setBlocked(decision.crisis_resources ?? null);
  } catch (error) {
    bubble.node.remove();
    if (error instanceof ApiError && error.status === 423) {
      setBlocked(error.message);
    } else {
      ui.messages.appendChild(
        el('li', { class: 'msg assistant', dataset: { state: 'error' } },
          el('div', { class: 'callout error', role: 'alert', text: `${error.status ? 'Not sent' : 'No reply'}: ${error.message}${error.requestId ? ` (request id ${error.requestId})` : ''}` })),
      );
    }
  } finally {
    observer.disconnect();
    state.busy = false;
    setComposer();
    scrollToEnd();
    if (!ui.input.disabled && !document.activeElement?.closest('.reply-form, .cards, .proposal')) ui.input.focus();
  }
}

async function signIn(key) {
  state.api = client(key);
  await loadConversations();
  await fillContracts(state.api, document.getElementById('nc-contracts'));
  store.set(key);
  document.body.dataset.signedIn = 'true';
  ui.app.hidden = false;
  ui.signinError.textContent = '';
  if (state.conversations.length > 0) await openConversation(state.conversations[0]);
  else ui.newForm.querySelector('input').focus();
}

function signOut() {
  store.clear();
  Object.assign(state, { api: null, conversations: [], total: 0, current: null, busy: false, blocked: false });
  clear(ui.messages);
  clear(ui.list);
  clearBlocked();
  ui.title.textContent = 'No conversation open';
  ui.context.textContent = '';
  panel.hide();
  ui.app.hidden = true;
  document.body.dataset.signedIn = 'false';
  ui.signinKey.value = '';
  ui.signinKey.focus();
}

ui.signinForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = ui.signinKey.value.trim();
  if (!key) return;
  ui.signinError.textContent = '';
  try {
    await signIn(key);
  } catch (error) {
    state.api = null;
    ui.signinError.textContent = error instanceof ApiError && error.status === 401
      ? 'This key was not accepted.'
      : `Cannot sign in: ${error.message}`;
  }
});

ui.signout.addEventListener('click', signOut);
ui.toggle.addEventListener('click', () => showSidebar(!ui.sidebar.classList.contains('open')));
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && ui.sidebar.classList.contains('open')) {
    showSidebar(false);
    ui.toggle.focus();
  }
});

ui.newForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const data = new FormData(ui.newForm);
  const context = {};
  for (const k of ['page', 'mode', 'language']) {
    const v = String(data.get(k) ?? '').trim();
    if (v) context[k] = v;
  }
  ui.newError.textContent = '';
  try {
    const conversation = await state.api.post('/v1/conversations', { contract: String(data.get('contract')).trim(), context });
    state.conversations.unshift(conversation);
    state.total = (state.total ?? 0) + 1;
    await openConversation(conversation);
  } catch (error) {
    ui.newError.textContent = error.message;
  }
});

ui.composer.addEventListener('submit', (event) => {
  event.preventDefault();
  if (send(ui.input.value)) ui.input.value = '';
});
ui.input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  }
});

const saved = store.get();
if (saved) {
  signIn(saved).catch(() => {
    store.clear();
    signOut();
  });
} else {
  ui.signinKey.focus();
}
