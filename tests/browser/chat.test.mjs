// The chat page in headless Chromium against the real `bridle serve` and `bridle mock-llm`
// (scripted replies): every block, form field, card and proposal kind, a form submission, a
// streamed reply whose first attempt fails, model-written markup staying inert text, safety
// and the blocked state, sign-in, and a phone-sized screen.
//
// BRIDLE_SCREENSHOTS=1 also saves the main screens to docs/screenshots/chat-*.png.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, USER_KEY, newPage, signIn, withBridle } from './harness.mjs';
import { openChat, reply, reply_n, say, shot, turns } from './chat-steps.mjs';
import * as fx from './fixtures.mjs';

test('sign in with a user key; a wrong key is refused; the key lasts the tab; sign out', async () => {
  await withBridle({}, async ({ bridle, browser }) => {
    const page = await newPage(browser);
    await page.goto(`${bridle.url}/`);
    await shot(page, 'signin');
    await page.locator('#signin-key').fill('bk_wrong');
    await page.locator('#signin button[type="submit"]').click();
    await page.locator('#signin-error', { hasText: 'This key was not accepted.' }).waitFor();
    assert.equal(await page.locator('body').getAttribute('data-signed-in'), 'false');

    await signIn(page, USER_KEY);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('bridle.chat.key')), USER_KEY);
    assert.equal(await page.evaluate(() => localStorage.length), 0, 'the key is never kept in localStorage');
    // The contract choices come from the server (GET /v1/contracts), labelled with their kind.
    await page.waitForFunction(() => [...document.querySelectorAll('#nc-contracts option')].some((o) => o.label.includes('xml')));
    const offered = await page.locator('#nc-contracts option').evaluateAll((os) => os.map((o) => o.value).sort());
    assert.deepEqual(offered, ['question-cards', 'selfhelp-response', 'table-chat', 'topic-analysis']);
    await page.reload();
    await page.locator('body[data-signed-in="true"]').waitFor();

    await page.locator('#signout').click();
    await page.locator('#signin-key').waitFor({ state: 'visible' });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('bridle.chat.key')), null);
    assert.deepEqual(page.problems, []);
  });
});

test('a selfhelp reply shows all 7 block types, the styles, every form field type, media, progress and chips', async () => {
  await withBridle({ script: turns(reply(fx.ALL_KINDS), reply(fx.SHORT)) }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle);
    const bubble = await say(page, 'I sleep badly');
    // Text blocks and styles.
    assert.equal(await bubble.locator('.block-heading h3').innerText(), 'Winding down for sleep');
    assert.equal(await bubble.locator('.block-text strong').first().innerText(), 'steady');
    assert.equal(await bubble.locator('.block-text em').first().innerText(), 'one');
    assert.equal(await bubble.locator('.block-text li').count(), 2);
    assert.equal(await bubble.locator('.block-text code').first().innerText(), '21:00');
    const link = bubble.locator('a', { hasText: 'more about sleep' });
    assert.equal(await link.getAttribute('href'), 'https://example.org/sleep');
    assert.match(await link.getAttribute('rel'), /noopener/);
    for (const [type, text] of [['info', '7–9 hours'], ['warning', 'caffeine'], ['error', 'tracker'], ['success', 'three nights']]) {
      const callout = bubble.locator(`.callout.${type}`);
      assert.equal(await callout.count(), 1, type);
      assert.match(await callout.innerText(), new RegExp(text), type);
    }
    assert.equal(await bubble.locator('.block-warning.style-bold').count(), 1);
    assert.equal(await bubble.locator('.block-success.style-italic').count(), 1);
    assert.equal(await bubble.locator('.block-code pre code').innerText(), 'bedtime = "22:30"\nwake = "06:30"');
    assert.equal(await bubble.locator('.style-quote blockquote').innerText(), 'Sleep is the best meditation.');
    assert.equal(await bubble.locator('.block-text.style-code pre code').innerText(), 'breathe in 4, hold 7, out 8');
    // The form: the seven field types.
    const form = bubble.locator('form.reply-form');
    assert.equal(await form.locator('h3').innerText(), 'Your evenings');
    assert.equal(await form.locator('.field-scale input[type="radio"]').count(), 5);
    assert.equal(await form.locator('.field-radio input[type="radio"]').count(), 2);
    assert.equal(await form.locator('.field-checkbox input[type="checkbox"]').count(), 3);
    assert.equal(await form.locator('.field-select select option').count(), 3);
    assert.equal(await form.locator('.field-text input[type="text"][placeholder="Your name"]').count(), 1);
    assert.equal(await form.locator('.field-textarea textarea').count(), 1);
    assert.equal(await form.locator('.field-number input[type="number"]').count(), 1);
    assert.equal(await form.locator('button[type="submit"]').innerText(), 'Send answers');
    assert.match(await form.locator('.field-scale .hint').innerText(), /1 = exhausted/);
    // Media with alt text and captions.
    const img = bubble.locator('figure.media-image img');
    assert.equal(await img.getAttribute('alt'), 'A calm blue square');
    assert.ok((await img.getAttribute('src')).startsWith('data:image/svg+xml'));
    assert.ok(await img.evaluate((i) => i.complete && i.naturalWidth > 0), 'the data: image loaded under the CSP');
    assert.equal(await bubble.locator('figure.media-video video[controls]').getAttribute('aria-label'), 'Breathing exercise video');
    assert.equal(await bubble.locator('figure.media-audio audio[controls]').getAttribute('aria-label'), 'Rain sounds');
    assert.deepEqual(await bubble.locator('figcaption').allInnerTexts(), ['Picture: calm', 'Video: breathing', 'Audio: rain']);
    // Progress.
    assert.equal(await bubble.locator('.progress progress').getAttribute('value'), '40');
    assert.match(await bubble.locator('.progress').innerText(), /40% · current topic: sleep_habits/);
    assert.match(await bubble.locator('.meta').innerText(), /^1 attempt/);
    await bubble.locator('h3.block-heading').scrollIntoViewIfNeeded();
    await shot(page, 'selfhelp');
    // A suggestion chip sends its value when it has one (spec 01), else its text.
    const chipsGroup = bubble.locator('.chips[aria-label="Suggestions"]');
    assert.deepEqual(await chipsGroup.locator('button').allInnerTexts(), ['Tell me more about sleep', 'All of them']);
    await chipsGroup.locator('button', { hasText: 'All of them' }).click();
    await reply_n(page, 2);
    assert.equal(await page.locator('.msg.user').last().innerText(), 'Tell me about all of them');
    assert.match(await page.locator('.msg.assistant').nth(1).innerText(), /Thanks, noted\./);
    assert.deepEqual(page.problems, []);
  });
});

test('a form validates required, min and max in the page, then sends the answers as the next message', async () => {
  await withBridle({ script: turns(reply(fx.ALL_KINDS), reply(fx.SHORT)) }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle);
    const bubble = await say(page, 'Ask me about my evenings');
    const form = bubble.locator('form.reply-form');
    const users = () => page.locator('.msg.user').count();
    await form.locator('button[type="submit"]').click();
    const errorOf = (id) => form.locator(`[data-field-id="${id}"] .field-error`);
    assert.equal(await errorOf('rested').innerText(), 'This field is required.');
    assert.equal(await errorOf('screens').innerText(), 'This field is required.');
    assert.equal(await errorOf('hours').innerText(), 'This field is required.');
    assert.equal(await errorOf('notes').innerText(), '');
    assert.equal(await form.locator('[data-field-id="hours"] input').getAttribute('aria-invalid'), 'true');
    assert.ok(await form.locator('[data-field-id="rested"] input').first().evaluate((i) => i === document.activeElement), 'the first invalid field has focus');
    await shot(page, 'form-errors');
    assert.equal(await users(), 1, 'nothing was sent');

    await form.locator('[data-field-id="hours"] input').fill('20');
    await form.locator('[data-field-id="name"] input').fill('A');
    await form.locator('button[type="submit"]').click();
    assert.equal(await errorOf('hours').innerText(), 'Enter at most 14.');
    assert.equal(await errorOf('name').innerText(), 'Write at least 2 characters.');
    await form.locator('[data-field-id="hours"] input').fill('-1');
    await form.locator('button[type="submit"]').click();
    assert.equal(await errorOf('hours').innerText(), 'Enter at least 0.');
    assert.equal(await users(), 1);

    await form.locator('[data-field-id="rested"] label', { hasText: '4' }).click();
    await form.locator('[data-field-id="screens"] label', { hasText: 'No' }).click();
    await form.locator('[data-field-id="drinks"] label', { hasText: 'Tea' }).click();
    await form.locator('[data-field-id="bedtime"] select').selectOption('late');
    await form.locator('[data-field-id="name"] input').fill('Ada');
    await form.locator('[data-field-id="notes"] textarea').fill('Fine');
    await form.locator('[data-field-id="hours"] input').fill('7.5');
    await form.locator('button[type="submit"]').click();
    await reply_n(page, 2);
    const expected = [
      'Your evenings:',
      '- How rested do you feel?: 4 (1–5)',
      '- Screens before bed?: No',
      '- Evening drinks: Tea',
      '- Usual bedtime: After 22:00',
      '- What should I call you?: Ada',
      '- Anything else?: Fine',
      '- Hours of sleep: 7.5',
    ].join('\n');
    assert.equal(await page.locator('.msg.user').last().innerText(), expected);
    assert.equal(await form.locator('.form-status').innerText(), 'Answers sent.');
    assert.ok(await form.locator('button[type="submit"]').isDisabled(), 'a sent form is disabled');
    // The model got the answers as the user's message.
    const log = JSON.stringify(await bridle.mock.requests());
    assert.ok(log.includes(JSON.stringify(expected).slice(1, -1)), 'the answers reached the model');
    assert.deepEqual(page.problems, []);
  });
});

test('question cards: options, the recommended one, multi-select up to max_selections, free text, keyboard', async () => {
  await withBridle({ script: turns(reply(fx.CARDS), reply('Thanks, that settles it.')) }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle, { contract: 'question-cards', mode: 'discovery' });
    const bubble = await say(page, 'Help me set up notifications');
    assert.match(await bubble.locator('.message-text').innerText(), /Let me understand your setup first\./);
    const cards = bubble.locator('fieldset.card');
    assert.equal(await cards.count(), 2);
    const first = cards.nth(0);
    assert.equal(await first.locator('legend').innerText(), 'Which notification channels should we enable?');
    assert.equal(await first.locator('input[type="checkbox"]').count(), 4);
    assert.match(await first.innerText(), /Choose up to 2\./);
    assert.equal(await first.locator('.option.recommended .label').innerText(), 'Email');
    assert.match(await first.locator('.option.recommended').innerText(), /Recommended/);
    assert.match(await first.locator('.option', { hasText: 'SMS' }).innerText(), /for urgent alerts only/);
    assert.equal(await first.locator('input.free-text').getAttribute('placeholder'), 'Or type your own answer...');
    const second = cards.nth(1);
    assert.equal(await second.locator('input[type="radio"]').count(), 2);
    await shot(page, 'cards');

    // Nothing chosen: each card asks for an answer, nothing is sent.
    await bubble.locator('form.cards button[type="submit"]').click();
    assert.equal(await first.locator('.field-error').innerText(), 'Choose an option or write an answer.');
    assert.equal(await page.locator('.msg.user').count(), 1);

    // At max_selections the other options are disabled.
    await first.locator('.option', { hasText: 'Email' }).click();
    await first.locator('.option', { hasText: 'Slack' }).click();
    assert.ok(await first.locator('.option', { hasText: 'SMS' }).locator('input').isDisabled());
    assert.ok(await first.locator('.option', { hasText: 'Push' }).locator('input').isDisabled());
    await first.locator('.option', { hasText: 'Email' }).click();
    assert.ok(!(await first.locator('.option', { hasText: 'SMS' }).locator('input').isDisabled()), 'unchecking frees a slot');
    await first.locator('.option', { hasText: 'Email' }).click();

    // The second card by keyboard: focus its first radio, arrow to the second, free text, Enter.
    await second.locator('input[type="radio"]').first().focus();
    await page.keyboard.press('Space');
    await page.keyboard.press('ArrowDown');
    assert.ok(await second.locator('.option', { hasText: 'local time' }).locator('input').isChecked());
    await page.keyboard.press('Tab');
    await page.keyboard.type('but UTC on servers');
    await page.keyboard.press('Enter');
    await reply_n(page, 2);
    assert.equal(
      await page.locator('.msg.user').last().innerText(),
      "Which notification channels should we enable? — Email; Slack\nAnd which time zone should the daily summary use? — The user's local time. but UTC on servers",
    );
    // The answers went by id, and the model read the same text.
    const sent = (await bridle.mock.requests()).at(-1).body.messages.at(-1).content;
    assert.equal(sent, await page.locator('.msg.user').last().innerText());
    assert.equal(await first.getAttribute('data-answered'), 'true');
    assert.equal(await first.locator('.option.chosen').count(), 2);
    assert.deepEqual(page.problems, []);
  });
});

test('a lone single-choice card is answered with one click, by its ids', async () => {
  const card = 'Who will use the app?\n\n(A) Only me\n(B) My family (recommended)';
  await withBridle({ script: turns(reply(card), reply('Good, a family app then.')) }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle, { contract: 'question-cards', mode: 'discovery' });
    const bubble = await say(page, 'I want an app for my flat');
    const fieldset = bubble.locator('fieldset.card');
    await fieldset.locator('.option', { hasText: 'My family' }).click();
    await reply_n(page, 2);
    assert.equal(await page.locator('.msg.user').last().innerText(), 'Who will use the app? — My family');
    assert.equal(await fieldset.getAttribute('data-answered'), 'true');
    assert.equal(await fieldset.locator('.option.chosen .label').innerText(), 'My family');
    assert.ok(await fieldset.locator('input').first().isDisabled(), 'an answered card takes no second answer');
    // The server got the ids: the admin view of the message has them.
    const list = await fetch(`${bridle.url}/v1/conversations`, { headers: { Authorization: `Bearer ${USER_KEY}` } }).then((r) => r.json());
    const id = list.items[0].id;
    const answer = await fetch(`${bridle.url}/admin/v1/conversations/${id}`, { headers: { Authorization: `Bearer ${ADMIN_KEY}` } })
      .then((r) => r.json())
      .then((body) => body.messages.filter((m) => m.role === 'user').at(-1).answer);
    assert.equal(answer.length, 1);
    assert.deepEqual(answer[0].option_ids, ['opt_2']);
    assert.match(answer[0].question_id, /^q_[0-9a-f]{16}$/);
    assert.deepEqual(page.problems, []);
  });
});

test('marker payloads: schema and data proposals as reviewable tables with apply and dismiss; suggested values and actions', async () => {
  const script = turns(reply(fx.SCHEMA_PROPOSAL), reply(fx.DATA_PROPOSAL), reply(fx.SUGGESTIONS), reply('Filtered.'));
  await withBridle({ script }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle, { contract: 'table-chat', page: 'table_view' });
    await page.evaluate(() => {
      window.__applied = [];
      window.__actions = [];
      window.addEventListener('bridle:apply-proposal', (e) => window.__applied.push(e.detail));
      window.addEventListener('bridle:action', (e) => window.__actions.push(e.detail));
    });
    // A schema proposal: operations and sample rows; dismissed.
    const schema = (await say(page, 'Track my job applications')).locator('section.proposal-schema_proposal');
    assert.equal(await schema.locator('h3').innerText(), 'New table: Job Applications');
    assert.equal(await schema.locator('table').first().locator('tbody tr').count(), 4);
    assert.match(await schema.locator('tbody tr', { hasText: 'Stage' }).innerText(), /select\s+options: Applied, Interview, Offer; filter: tab/);
    assert.equal(await schema.locator('table').nth(1).locator('tbody tr').count(), 2, 'the sample rows');
    await shot(page, 'proposal');
    await schema.locator('button', { hasText: 'Dismiss' }).click();
    assert.equal(await schema.getAttribute('data-state'), 'dismissed');
    assert.ok(await schema.locator('button', { hasText: 'Apply' }).isDisabled());
    assert.deepEqual(await page.evaluate(() => window.__applied), []);

    // A data proposal: a checkbox per row; one unticked, then applied.
    const data = (await say(page, 'Update my rows')).locator('section.proposal-data_proposal');
    assert.equal(await data.locator('h3').innerText(), 'Data changes (3 rows)');
    assert.equal(await data.locator('tr.op-add').count(), 1);
    assert.equal(await data.locator('tr.op-update').count(), 1);
    assert.equal(await data.locator('tr.op-delete').count(), 1);
    assert.match(await data.locator('tr.op-update').innerText(), /#3\s+Stage: Offer/);
    await data.locator('tr.op-delete input[type="checkbox"]').uncheck();
    await data.locator('button', { hasText: 'Apply' }).click();
    assert.equal(await data.locator('.status').innerText(), 'Applied (2 changes).');
    const applied = await page.evaluate(() => window.__applied);
    assert.equal(applied.length, 1);
    assert.equal(applied[0].type, 'data_proposal');
    assert.deepEqual(applied[0].data.operations.map((o) => o.action), ['add', 'update']);

    // Suggested values send their value; actions are handed to the hosting application.
    const suggestions = await say(page, 'Filter please');
    await suggestions.locator('.chips[aria-label="Actions"] button', { hasText: 'Open filters' }).click();
    assert.equal((await page.evaluate(() => window.__actions))[0].action, 'open_filters');
    await suggestions.locator('.chips[aria-label="Suggested values"] button', { hasText: 'Offer' }).click();
    await reply_n(page, 4);
    assert.equal(await page.locator('.msg.user').last().innerText(), 'Offer');
    assert.deepEqual(page.problems, []);
  });
});

test('an xml topic-analysis reply shows its response and the analysis', async () => {
  await withBridle({ script: turns(reply(fx.TOPIC)) }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle, { contract: 'topic-analysis' });
    const bubble = await say(page, 'How do I fall asleep faster?');
    assert.match(await bubble.locator('.message-text').innerText(), /A steady bedtime helps/);
    await bubble.locator('details.topic summary').click();
    assert.match(await bubble.locator('details.topic').innerText(), /sleep-routine\s+new\s+— Evening habits[\s\S]*bedtime \(0\.92\)/);
    assert.deepEqual(page.problems, []);
  });
});

test('a streamed reply whose first attempt fails: its partial content disappears and the retry is shown', async () => {
  const draft = ['DRAFT-ONE ', 'partial ', 'words ', 'that ', 'will ', 'vanish.\n\n', 'SCHEMA_PROPOSAL: {"mode": "bogus", "operations": []}'];
  const final = ['Here ', 'is ', 'the ', 'final ', 'answer.'];
  const json = [
    '{"type": "response", "content": {"text_blocks": [{"type": "text", "content": "DRAFT-JSON visible for a moment, long enough to be shown as a partial value"}]}, ',
    '"safety": {"is_safe": true, ',
    '"danger_level": "apocalyptic", ',
    '"detected_concerns": [], "requires_intervention": false}, "metadata": {"model": "m"}}',
  ];
  const script = turns([{ pieces: draft }, { pieces: final }], [{ pieces: json }, reply(fx.SHORT)]);
  // A long retry pause: between attempt_failed and the next attempt_started the draft must be gone.
  const env = { BRIDLE__RETRY__DELAY_MS: '1500' };
  await withBridle({ script, env, mockArgs: ['--stream-interval-ms', '150'] }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle, { contract: 'table-chat', page: 'table_view' });
    // Record what the stream showed, as it showed it.
    await page.evaluate(() => {
      window.__seen = new Set();
      new MutationObserver(() => {
        const text = document.getElementById('messages').textContent;
        for (const mark of ['DRAFT-ONE', 'DRAFT-JSON', 'Here is']) if (text.includes(mark)) window.__seen.add(mark);
        // A failure note beside a draft: the failed attempt's content outlived attempt_failed.
        if (document.querySelector('.attempt-note') && /DRAFT-/.test(text)) window.__draftWithNote = true;
      }).observe(document.getElementById('messages'), { subtree: true, childList: true, characterData: true });
    });
    await page.locator('#composer-input').fill('Make me a table');
    await page.locator('#composer-input').press('Enter');
    await page.waitForFunction(() => window.__seen.has('DRAFT-ONE'), null, { timeout: 15000 });
    assert.ok(await page.locator('#composer-input').isDisabled(), 'the composer waits for the turn');
    await page.locator('.attempt-note', { hasText: 'Attempt 1 failed' }).waitFor({ timeout: 15000 });
    assert.ok(!(await page.locator('.msg.assistant').first().innerText()).includes('DRAFT-ONE'), 'gone as soon as attempt_failed came');
    const bubble = await reply_n(page, 1);
    await shot(page, 'retry');
    const text = await bubble.innerText();
    assert.ok(!text.includes('DRAFT-ONE'), `the failed attempt's text is gone: ${text}`);
    assert.match(text, /Attempt 1 failed \(the reply broke the contract/);
    assert.match(await bubble.locator('.body').innerText(), /^Here is the final answer\.$/);
    assert.match(await bubble.locator('.meta').innerText(), /^2 attempts/);

    // A JSON reply stopped early: its partial value is shown, then removed.
    await page.locator('#nc-contract').fill('selfhelp-response');
    await page.locator('#nc-page').selectOption('');
    await page.locator('#new-conversation button[type="submit"]').click();
    await page.locator('#chat-title', { hasText: 'selfhelp-response' }).waitFor();
    const second = await say(page, 'How are you?');
    assert.ok(await page.evaluate(() => window.__seen.has('DRAFT-JSON')), 'the partial value was shown while streaming');
    assert.ok(!(await second.innerText()).includes('DRAFT-JSON'));
    assert.equal(await page.evaluate(() => window.__draftWithNote), undefined, 'no failure note ever stood beside a draft');
    assert.match(await second.locator('.attempt-note').innerText(), /Attempt 1 failed \(stopped early: the reply already broke the contract: enum at \/safety\/danger_level\)/);
    assert.match(await second.locator('.body').innerText(), /Thanks, noted\./);
    assert.deepEqual(page.problems, []);
  });
});

test('markup in replies and messages stays inert text: no script runs, no element is made', async () => {
  const script = turns(reply(fx.XSS_SELFHELP), { pieces: fx.XSS_MARKERS.match(/[\s\S]{1,7}/g) });
  await withBridle({ script }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle);
    const bubble = await say(page, '<script>window.__xss=9</script><img src=z onerror="window.__xss=11">');
    assert.equal(await page.locator('.msg.user').first().innerText(), '<script>window.__xss=9</script><img src=z onerror="window.__xss=11">');
    const text = await bubble.innerText();
    for (const payload of fx.XSS_TEXTS) assert.ok(text.includes(payload), `shown as text: ${payload}\n${text}`);
    assert.ok(text.includes('<iframe src="javascript:window.__xss=5"></iframe>'));
    assert.ok(text.includes('[image not shown: unsupported address]'));
    assert.equal(await bubble.locator('a', { hasText: 'click me' }).count(), 0, 'a javascript: link is not a link');
    await bubble.locator('.chips button').first().hover();
    await bubble.locator('form.reply-form label').first().hover();

    await page.locator('#nc-contract').fill('table-chat');
    await page.locator('#nc-page').selectOption('table_view');
    await page.locator('#new-conversation button[type="submit"]').click();
    await page.locator('#chat-title', { hasText: 'table-chat' }).waitFor();
    const streamed = await say(page, 'Show me');
    assert.match(await streamed.innerText(), /Streamed <img src=x onerror="window.__xss=2"> and <script>window.__xss=1<\/script> as text\./);
    await streamed.locator('.chips button').first().hover();
    await page.waitForTimeout(300);

    assert.equal(await page.evaluate(() => window.__xss), undefined, 'no injected code ran');
    const made = await page.evaluate(() => ({
      scripts: document.querySelectorAll('#messages script, #messages iframe, #messages svg').length,
      handlers: [...document.querySelectorAll('#messages *')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
      imgs: [...document.querySelectorAll('#messages img')].map((i) => i.getAttribute('src')),
      jsLinks: [...document.querySelectorAll('#messages [href]')].filter((a) => !/^https?:|^mailto:/.test(a.getAttribute('href'))).length,
    }));
    assert.deepEqual(made, { scripts: 0, handlers: 0, imgs: [], jsLinks: 0 });
    await shot(page, 'inert-markup');
    assert.deepEqual(page.problems, []);
  });
});

test('safety: a warning note, then an emergency shows crisis resources and blocks the conversation', async () => {
  await withBridle({ script: turns(reply(fx.WARNING), reply(fx.EMERGENCY)) }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle);
    const warning = await say(page, 'Exams stress me out');
    assert.match(await warning.locator('.safety-banner.level-warning').innerText(), /it is okay to ask for support/);
    assert.equal(await page.locator('#blocked-banner').isVisible(), false);

    const emergency = await say(page, 'I do not want to live any more');
    const banner = emergency.locator('.safety-banner.level-emergency');
    assert.equal(await banner.getAttribute('role'), 'alert');
    assert.match(await banner.innerText(), /You deserve help right now/);
    const crisis = (await banner.locator('.crisis').innerText()).trim();
    assert.ok(crisis.length > 10, `crisis resources shown: ${crisis}`);
    await page.locator('#blocked-banner').waitFor({ state: 'visible' });
    assert.match(await page.locator('#blocked-banner').innerText(), /paused for your safety/);
    assert.ok(await page.locator('#composer-input').isDisabled(), 'a blocked conversation takes no messages');
    assert.equal(await page.locator('body').getAttribute('data-blocked'), 'true');
    await shot(page, 'safety');

    // After a reload the conversation is still shown blocked, with the list's badge.
    await page.reload();
    await page.locator('body[data-signed-in="true"]').waitFor();
    await page.locator('#blocked-banner').waitFor({ state: 'visible' });
    assert.ok(await page.locator('#composer-input').isDisabled());
    assert.equal(await page.locator('#conversations .badge', { hasText: 'blocked' }).count(), 1);
    assert.deepEqual(page.problems, []);
  });
});

test('on a phone-sized screen the chat fits, the sidebar opens and closes, and a reply is readable', async () => {
  await withBridle({ script: turns(reply(fx.ALL_KINDS)) }, async ({ bridle, browser }) => {
    const viewport = { width: 390, height: 844 };
    const page = await openChat(browser, bridle, { viewport });
    assert.equal(await page.locator('#sidebar').isVisible(), false, 'the sidebar closes when a conversation opens');
    await say(page, 'I sleep badly');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no sideways scrolling (${overflow}px too wide)`);
    const composer = await page.locator('#composer').boundingBox();
    assert.ok(composer && composer.y + composer.height <= viewport.height && composer.width <= viewport.width, 'the composer is on screen');
    const form = await page.locator('form.reply-form').boundingBox();
    assert.ok(form.width <= viewport.width, 'the form fits the width');
    await page.locator('.msg.assistant h3.block-heading').scrollIntoViewIfNeeded();
    await shot(page, 'phone');
    await page.locator('#toggle-sidebar').click();
    assert.equal(await page.locator('#toggle-sidebar').getAttribute('aria-expanded'), 'true');
    assert.ok(await page.locator('#sidebar').isVisible());
    await page.keyboard.press('Escape');
    assert.equal(await page.locator('#sidebar').isVisible(), false);
    assert.ok(await page.locator('#toggle-sidebar').evaluate((b) => b === document.activeElement), 'focus returns to the toggle');
    assert.deepEqual(page.problems, []);
  });
});

test('the conversation list pages: the newest first, then "Show older" for the rest', async () => {
  await withBridle({}, async ({ bridle, browser }) => {
    for (let i = 0; i < 57; i++) {
      const response = await fetch(`${bridle.url}/v1/conversations`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${USER_KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ contract: 'question-cards', context: { mode: `m${i}` } }),
      });
      assert.equal(response.status, 201);
    }
    const page = await newPage(browser);
    await page.goto(`${bridle.url}/`);
    await signIn(page, USER_KEY);
    const items = page.locator('#conversations li');
    await items.first().waitFor();
    assert.equal(await items.count(), 50);
    assert.match(await items.first().innerText(), /m56/, 'the newest first');
    const more = page.locator('button.more');
    assert.equal(await more.innerText(), 'Show older conversations (7)');
    await more.click();
    await page.locator('#conversations li').nth(56).waitFor();
    assert.equal(await items.count(), 57);
    assert.match(await items.last().innerText(), /m0\b/, 'the oldest last');
    assert.ok(await more.isHidden(), 'nothing older is left');
    assert.deepEqual(page.problems, []);
  });
});
