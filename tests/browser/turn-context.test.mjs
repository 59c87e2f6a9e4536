// The chat page's "Context for the next message" panel in headless Chromium against the real
// `bridle serve` and a scripted `bridle mock-llm`: a card thread moved from discovery to
// clarification to a normal answer, and a table chat moved from the tables list to a table
// whose rows the page sends, where a data proposal shows each old value beside the new one.
// Each turn's context is checked where the server keeps it (the admin view) and where the model
// reads it (the mock's request log); a reload shows the history as it was.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, USER_KEY, withBridle } from './harness.mjs';
import { openChat, reply, reply_n, say, shot, turns } from './chat-steps.mjs';
import * as fx from './fixtures.mjs';

// The user messages of the only conversation, as the admin view stores them.
async function userMessages(bridle) {
  const auth = (key) => ({ headers: { Authorization: `Bearer ${key}` } });
  const list = await fetch(`${bridle.url}/v1/conversations`, auth(USER_KEY)).then((r) => r.json());
  assert.equal(list.items.length, 1);
  const body = await fetch(`${bridle.url}/admin/v1/conversations/${list.items[0].id}`, auth(ADMIN_KEY)).then((r) => r.json());
  return body.messages.filter((m) => m.role === 'user');
}

async function setContext(page, { pageName, mode }) {
  const panel = page.locator('#turn-context');
  if (!(await panel.evaluate((d) => d.open))) await panel.locator('summary').click();
  if (pageName !== undefined) await page.locator('#tc-page').selectOption(pageName);
  if (mode !== undefined) await page.locator('#tc-mode').selectOption(mode);
}

test('a card thread moves from discovery to clarification to a normal answer, each turn under its mode', async () => {
  const script = turns(
    reply('Who will use the app?\n\n(A) Only me\n(B) My family (recommended)'),
    reply('Which rooms should it cover?\n\n(A) Kitchen\n(B) Living room'),
    reply('Here is the plan. You could start with:\n\n(A) The kitchen\n(B) The living room'),
  );
  await withBridle({ script }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle, { contract: 'question-cards', mode: 'discovery' });
    const first = await say(page, 'I want an app for my flat');
    assert.equal(await first.locator('fieldset.card').count(), 1, 'a card in discovery');

    // Clarification for the next turn, then the card answered with one click.
    await setContext(page, { mode: 'clarification' });
    assert.match(await page.locator('#chat-context').innerText(), /mode: clarification/);
    await first.locator('fieldset.card .option', { hasText: 'My family' }).click();
    const second = await reply_n(page, 2);
    assert.equal(await second.locator('fieldset.card').count(), 1, 'a card in clarification');

    // A normal answer: the same kind of text is no card now.
    await setContext(page, { mode: 'normal' });
    const third = await say(page, 'Make the plan');
    assert.equal(await third.locator('fieldset.card').count(), 0, 'no card outside the card modes');
    assert.match(await third.innerText(), /Here is the plan/);

    const users = await userMessages(bridle);
    assert.deepEqual(users.map((m) => m.context.mode), ['discovery', 'clarification', 'normal']);
    assert.equal(users[1].answer[0].option_ids[0], 'opt_2', 'the card answer went by id');
    // Each turn's prompt was built under its own mode.
    const systems = (await bridle.mock.requests()).map((r) => r.body.messages[0].content);
    assert.equal(systems.length, 3);
    assert.notEqual(systems[0], systems[2], 'the normal turn is prompted differently from discovery');

    // After a reload the history shows the answered card, and the panel keeps the last mode.
    await page.reload();
    await page.locator('body[data-signed-in="true"]').waitFor();
    await page.locator('.msg.assistant').nth(2).waitFor();
    const answered = page.locator('.msg.assistant').first().locator('fieldset.card');
    assert.equal(await answered.getAttribute('data-answered'), 'true');
    assert.equal(await answered.locator('.option.chosen .label').innerText(), 'My family');
    assert.equal(await page.locator('#tc-mode').inputValue(), 'normal');
    assert.deepEqual(page.problems, []);
  });
});

test('a table chat moves from the tables list to a table; a data proposal shows old values beside new ones', async () => {
  const script = turns(reply('You have one table, Job Applications.'), reply(fx.DATA_PROPOSAL));
  await withBridle({ script }, async ({ bridle, browser }) => {
    const page = await openChat(browser, bridle, { contract: 'table-chat', page: 'tables_list' });
    await say(page, 'Which tables do I have?');

    // Open the table: page and the table's state (columns, visible rows, filters, sort).
    await setContext(page, { pageName: 'table_view' });
    await page.locator('#tc-sample').click();
    assert.match(await page.locator('#chat-context').innerText(), /page: table_view · Job Applications \(3 rows\)/);
    const bubble = await say(page, 'Move Northwind on and drop the duplicate');
    const data = bubble.locator('section.proposal-data_proposal');
    const update = data.locator('tr.op-update .change');
    assert.equal(await update.locator('del').innerText(), 'Interview');
    assert.equal(await update.locator('ins').innerText(), 'Offer');
    assert.equal(await update.getAttribute('title'), 'was: Interview');
    assert.match(await data.locator('tr.op-delete').innerText(), /#7\s+Company: Northwind; Role: Backend engineer; Stage: Interview/);
    await shot(page, 'context');

    // A bad state is refused in the page, and nothing is sent.
    await page.locator('#tc-state').fill('{"table": ');
    await page.locator('#composer-input').fill('Hello?');
    await page.locator('#composer-input').press('Enter');
    assert.equal(await page.locator('#tc-error').innerText(), 'The application state is not valid JSON.');
    assert.equal(await page.locator('#composer-input').inputValue(), 'Hello?', 'the message is kept');

    const users = await userMessages(bridle);
    assert.equal(users.length, 2);
    assert.equal(users[0].context.page, 'tables_list');
    assert.equal(users[0].context.app_state, undefined);
    assert.equal(users[1].context.page, 'table_view');
    assert.equal(users[1].context.app_state.table.rows[0].Company, 'Northwind');
    // The model read the table in the second turn's prompt, not in the first.
    const systems = (await bridle.mock.requests()).map((r) => r.body.messages[0].content);
    assert.ok(!systems[0].includes('Northwind'));
    assert.match(systems[1], /Application state[\s\S]*Northwind/);

    // After a reload the proposal still shows the old values: its turn's state is kept.
    await page.reload();
    await page.locator('body[data-signed-in="true"]').waitFor();
    const again = page.locator('.msg.assistant').nth(1).locator('tr.op-update .change del');
    await again.waitFor();
    assert.equal(await again.innerText(), 'Interview');
    assert.equal(await page.locator('#tc-page').inputValue(), 'table_view');
    assert.deepEqual(page.problems, []);
  });
});
